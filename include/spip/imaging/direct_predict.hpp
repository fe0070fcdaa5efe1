#pragma once
// Model visibilities of a sparse model by direct evaluation: V_s = sum_c S_c,s
// exp(+2 pi i (u l_c + v m_c + w (n_c - 1))) over the model's non-zero pixels, the
// gridder's convention (gridder.hpp). A point CLEAN's model holds tens of pixels,
// where a gridded predict still pays a full grid's FFTs per w-plane; evaluated
// directly it is also exact to single precision, not good to the gridder's accuracy.
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spip/imaging/geometry.hpp"

namespace spip::imaging {

struct ModelComponent {
  double l, m, n_minus_1;
  std::array<float, 4> flux;  // per Stokes parameter, Jy
};

// The pixels of images [stokes][N*N] (num_stokes <= 4) where any parameter is non-zero,
// with n - 1 set to 0 when w is ignored (2-D imaging, as the gridder then does); the
// scan stops at limit + 1 of them (a model too dense to evaluate directly).
std::vector<ModelComponent> model_components(const float* images, int num_stokes, const ImageGeometry& geometry,
                                             bool wstacking, std::size_t limit = SIZE_MAX);

// vis[k][s] for s < num_stokes, over coordinates in wavelengths [count][3].
void predict_direct(const std::vector<ModelComponent>& components, int num_stokes, const double* uvw_lambda,
                    std::size_t count, std::complex<float>* vis);

// The most components whose direct evaluation over `count` visibilities costs less than
// a gridded predict whose FFTs alone transform `w_planes` grids of `grid_cells` (and at
// most 65,536, so that their list stays small).
std::size_t direct_predict_limit(std::size_t count, int w_planes, std::size_t grid_cells);

}  // namespace spip::imaging
