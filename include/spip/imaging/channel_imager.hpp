#pragma once
// One channel's visibilities in the four Stokes parameters, ready to invert (dirty
// images, PSF) and predict (model visibilities); what CLEAN's major cycle needs.
// Images are [stokes][N*N], x fastest; visibilities and weights [k][stokes].
#include <array>
#include <complex>
#include <vector>

#include "spip/imaging/gridder.hpp"
#include "spip/imaging/row_group.hpp"

namespace spip::imaging {

inline constexpr int num_stokes = 4;

// The PSF over `side` x `side` pixels of `geometry`'s cell, peak 1 at (side/2, side/2),
// without w-terms, from coordinates in wavelengths [k][3] and the Stokes I column of
// imaging weights [k][4], normalised by `weight_sum` (the channel's, which a group's
// members share): the minor cycles' PSF of twice the image's side (deconv::MinorPsf),
// for both backends.
// Without w-terms it is sum w cos(2 pi (u l + v m)) / sum w, a positive-definite
// function of the offset, the property that keeps Hogbom from diverging; its gridder
// (one FFT of a grid of four times the cells) is made and freed here.
std::vector<float> wide_psf(const ImageGeometry& geometry, int side, double accuracy, const double* uvw_lambda,
                            const float* weights, std::size_t count, double weight_sum);

class ChannelImager {
 public:
  ChannelImager(const ImageGeometry& geometry, double accuracy, bool wstacking);

  // Coordinates in wavelengths [k][3] and imaging weights [k][4] of the channel.
  // Visibilities beyond the grid (gridder().num_outside()) get zero weight. With a
  // group, these are this rank's share of the rows: the w-planes and the weight sums
  // (the images' normalisation) are the whole channel's, so that the members' images
  // add up to the channel's.
  void set_data(std::vector<double> uvw_lambda, std::vector<float> weights, const RowGroup* group = nullptr);

  // Dirty images in Jy/beam: each Stokes parameter normalised by its weight sum, so a
  // point source of S Jy peaks at S. Parameters with no weight give zero images.
  void dirty(const std::complex<float>* vis, float* images) const;
  // The PSF from the Stokes I weights, peak 1 at pixel (N/2, N/2).
  void psf(float* image) const;
  // wide_psf() of this channel. With a group, every member calls it and gets the
  // channel's PSF.
  std::vector<float> psf(int side, const RowGroup* group) const;
  // Model visibilities of model images in Jy/pixel: evaluated directly where the model
  // has few enough non-zero pixels for that to cost less (direct_predict.hpp), else
  // degridded.
  void predict(const float* model, std::complex<float>* vis) const;

  const ImageGeometry& geometry() const { return gridder_.geometry(); }
  std::size_t num_visibilities() const { return uvw_.size() / 3; }
  const double* uvw_lambda() const { return uvw_.data(); }
  double weight_sum(int stokes) const { return weight_sum_[stokes]; }
  const Gridder& gridder() const { return gridder_; }

 private:
  Gridder gridder_;
  double accuracy_;
  bool wstacking_;
  std::vector<double> uvw_;
  std::vector<float> weights_;
  std::array<double, num_stokes> weight_sum_{};
};

}  // namespace spip::imaging
