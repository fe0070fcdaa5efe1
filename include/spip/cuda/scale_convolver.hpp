#pragma once
// deconv::Convolver with cuFFT on one device, for the GPU backend's multiscale CLEAN: the
// filters' transforms stay on the device, and each call moves its planes in and its
// results out. No CUDA types cross this header.
#include <cstddef>
#include <memory>

#include "spip/deconv/convolver.hpp"

namespace spip::cuda {

std::unique_ptr<deconv::Convolver> make_scale_convolver(int device, int n, int reach = 0);

// What make_scale_convolver(device, n, reach) holds on its device with `filters`
// filters: two work planes, each filter's transform and about one more for the cuFFT
// plan's work area, all complex M x M.
inline std::size_t scale_convolver_device_bytes(int n, int reach, int filters) {
  const auto m = static_cast<std::size_t>(deconv::convolution_size(n, reach));
  return static_cast<std::size_t>(3 + filters) * 8 * m * m;
}

}  // namespace spip::cuda
