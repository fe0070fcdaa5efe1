#pragma once
// The Hogbom minor cycle on the device: a CUB reduction of the pixels' peak candidates
// by the CPU's rule (deconv::stronger_peak),
// one thread that takes the component, and a kernel that subtracts the shifted PSF.
// The host only reads the state every few iterations to see whether it stopped.
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda_check.hpp"
#include "spip/config/config.hpp"
#include "spip/deconv/clean_math.hpp"

namespace spip::cuda::detail {

struct MinorCycleState {
  long long pixel;     // where the last component was taken
  float flux[4];       // its flux per Stokes parameter
  int iterations;
  int max_iterations;
  int done;            // set once the peak falls to the stop level or the iterations run out
};

class MinorCycle {
 public:
  explicit MinorCycle(long long pixels);

  // The peak-search value (Jy/beam) of the residuals [4][pixels]; synchronises.
  double peak(PeakSearch search, const float* residual, cudaStream_t stream);
  // Hogbom iterations as deconv::hogbom(); returns the iterations done.
  int run(PeakSearch search, float* residual, const float* psf, int size, double gain, double stop_level,
          int max_iterations, float* model, cudaStream_t stream);

 private:
  void enqueue_search(PeakSearch search, const float* residual, cudaStream_t stream);
  long long pixels_;
  DeviceArray<deconv::PeakCandidate> candidates_;  // per pixel
  DeviceArray<deconv::PeakCandidate> best_;
  DeviceArray<char> scratch_;        // CUB temporary storage
  DeviceArray<MinorCycleState> state_;
  PinnedBuffer host_state_;          // a MinorCycleState, then the best candidate
  MinorCycleState& host_state() const { return *reinterpret_cast<MinorCycleState*>(host_state_.get()); }
  deconv::PeakCandidate& host_best() const {
    return *reinterpret_cast<deconv::PeakCandidate*>(host_state_.get() + sizeof(MinorCycleState));
  }
};

}  // namespace spip::cuda::detail
