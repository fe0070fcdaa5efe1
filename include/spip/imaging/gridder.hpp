#pragma once
// Convolutional gridding and degridding with the ES kernel and improved w-stacking
// (Arras et al. 2021, as in ducc0's wgridder): visibilities are spread over W_w
// w-planes with the same kernel as in u and v, each plane is Fourier transformed
// and multiplied by its w-screen, and the image is divided by the kernel's exact
// transform in u, v and w. Its error is set by `accuracy`, not by the number of planes.
//
// Conventions (../shared/data/README.md): V = sum S exp(+2 pi i (u l + v m + w (n - 1))),
// so the dirty image is Re sum_k c_k exp(-2 pi i (u_k l + v_k m + w_k (n - 1))).
#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

#include "spip/imaging/es_kernel.hpp"
#include "spip/imaging/geometry.hpp"

namespace spip::imaging {

class Gridder {
 public:
  // `wstacking` false gives 2-D imaging (w ignored), wrong for wide fields.
  Gridder(const ImageGeometry& geometry, double accuracy, bool wstacking);
  ~Gridder();
  Gridder(const Gridder&) = delete;
  Gridder& operator=(const Gridder&) = delete;

  // Lays out w-planes for these coordinates (wavelengths, [k][3]), spanning at least
  // +-w_reach (make_point_layout); call before grid()/degrid() whenever the
  // coordinates change (e.g. per channel).
  void set_uvw(const double* uvw_lambda, std::size_t count, double w_reach = 0);

  // images[s * N*N + pixel] = Re sum_k weight[k][s] vis[k][s] exp(-2 pi i ...), for
  // num_stokes parameters stored interleaved per visibility. Not normalised.
  void grid(const std::complex<float>* vis, const float* weight, int num_stokes, float* images) const;

  // vis[k][s] = sum_pixels images[s][pixel] exp(+2 pi i ...), the adjoint of grid()
  // with unit weights.
  void degrid(const float* images, int num_stokes, std::complex<float>* vis) const;

  const ImageGeometry& geometry() const { return geometry_; }
  int num_w_planes() const;
  std::size_t num_outside() const;  // visibilities beyond the grid (skipped)
  bool inside(std::size_t k) const; // visibility k of the last set_uvw is gridded
  EsKernel uv_kernel() const;

  // What set_uvw() holds per visibility at most, for the memory plan: one direct and two
  // hermitian points, each with its coordinates, first cells, kernel values in u and v,
  // rotation and w-plane weights (the kernels' widths follow from the accuracy), and
  // while they are grouped the layout's lists and the sort's keys.
  static double bytes_per_visibility(const ImageGeometry& geometry, double accuracy, bool wstacking);

 private:
  struct Impl;
  ImageGeometry geometry_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spip::imaging
