#pragma once
// Where one channel is to be written for imaging, for the rows of the run's coordinates:
// weights [k][4] and Stokes visibilities [k][4]. Host memory on the CPU backend, pinned
// staging memory on a GPU rank; the host writes it the same way for both.
#include <complex>
#include <cstddef>

namespace spip::imaging {

struct ChannelView {
  std::size_t rows = 0;
  float* weights = nullptr;
  std::complex<float>* vis = nullptr;
};

}  // namespace spip::imaging
