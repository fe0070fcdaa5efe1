#pragma once
// deconv::Convolver with cuFFT on one device, for the GPU backend's multiscale CLEAN: the
// filters' transforms stay on the device, and each call moves its planes in and its
// results out. No CUDA types cross this header.
#include <memory>

#include "spip/deconv/convolver.hpp"

namespace spip::cuda {

std::unique_ptr<deconv::Convolver> make_scale_convolver(int device, int n, int reach = 0);

}  // namespace spip::cuda
