#pragma once
// Where one channel is to be written for imaging: its rows' coordinates [k][3], in
// metres at the channel's frequency (a visibility measured at nu_k, gridded into a
// channel at nu, has its UVW scaled by nu_k / nu), weights [k][4] and Stokes
// visibilities [k][4]. Host memory on the CPU backend, pinned
// staging memory on a GPU rank; the host writes it the same way for both.
#include <complex>
#include <cstddef>

namespace spip::imaging {

struct ChannelView {
  std::size_t rows = 0;
  double* uvw_m = nullptr;
  float* weights = nullptr;
  std::complex<float>* vis = nullptr;
};

}  // namespace spip::imaging
