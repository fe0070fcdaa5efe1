#pragma once
// The minor cycles on the device: a CUB reduction of the pixels' peak candidates by the
// CPU's rule (deconv::stronger_peak), one thread that takes the component, and a kernel
// that subtracts the shifted PSF. The host only reads the state every few iterations
// to see whether it stopped. A mask (one byte per pixel, or null) limits the search, as
// on the CPU; the sub-minor loop searches the pixels above its stop only.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda_check.hpp"
#include "spip/config/config.hpp"
#include "spip/deconv/clean_math.hpp"

namespace spip::cuda::detail {

struct MinorCycleState {
  long long pixel;     // where the last component was taken: the image pixel, or in the
                       // sub-minor loop its place in the active list
  float flux[4];       // its flux per Stokes parameter
  int iterations;
  int max_iterations;
  int done;            // set once the peak falls to the stop level or the iterations run out
  int found;           // the sub-minor pass's distinct components so far
};

// A pixel of the sub-minor pass's active list and the flux taken there, to be
// subtracted from the whole image later; pixel -1 until it is first taken.
struct DeviceComponent {
  long long pixel;
  float flux[4];
};

class MinorCycle {
 public:
  explicit MinorCycle(long long pixels);

  // Device bytes per pixel of an image, for the memory plan.
  static std::size_t bytes_per_pixel();

  // The peak-search value (Jy/beam) of the residuals [4][pixels]; synchronises.
  double peak(PeakSearch search, const float* residual, const std::uint8_t* mask, cudaStream_t stream);
  // Hogbom iterations as deconv::hogbom(), with a PSF of the image's `size` or twice it;
  // returns the iterations done.
  int run(PeakSearch search, float* residual, deconv::MinorPsf psf, int size, double gain, double stop_level,
          int max_iterations, float* model, const std::uint8_t* mask, cudaStream_t stream);
  // The sub-minor loop as deconv::subminor_hogbom(): the pixels above the stop are taken
  // out (by pixel order), cleaned among themselves, and the components found are then
  // subtracted from the whole image in one pass. Where more pixels than the CPU's
  // limit (max(N^2/16, 1024)) are above the stop, the rest of the call runs as run():
  // the CPU instead cleans the brightest of them first.
  int run_subminor(PeakSearch search, float* residual, deconv::MinorPsf psf, int size, double gain,
                   double stop_level, int max_iterations, float* model, const std::uint8_t* mask,
                   cudaStream_t stream);
  // clean.auto_mask: mask = the pixels where any Stokes plane of the model is non-zero.
  void mask_model_pixels(const float* model, std::uint8_t* mask, cudaStream_t stream);

 private:
  void enqueue_search(PeakSearch search, const float* residual, const std::uint8_t* mask, cudaStream_t stream);
  void enqueue_reduction(long long count, cudaStream_t stream);
  void start(int max_iterations, cudaStream_t stream);
  bool finished(cudaStream_t stream);
  long long select_active(PeakSearch search, const float* residual, const std::uint8_t* mask, double stop_level,
                          cudaStream_t stream);
  long long pixels_;
  long long capacity_;  // of the sub-minor loop's pixels and components
  DeviceArray<deconv::PeakCandidate> candidates_;  // per pixel
  DeviceArray<deconv::PeakCandidate> best_;
  DeviceArray<char> scratch_;        // CUB temporary storage, for the reduction and the sort
  DeviceArray<MinorCycleState> state_;
  DeviceArray<long long> active_, sorted_;  // the sub-minor loop's pixels: the sort's two buffers
  const long long* active_list_ = nullptr;   // whichever of them holds the sorted list
  DeviceArray<float> values_;                // their residuals [4][count]
  DeviceArray<DeviceComponent> components_;  // per place in the active list, as the CPU merges a pixel's takes
  DeviceArray<int> order_;                   // those places in the order they were first taken
  DeviceArray<unsigned long long> count_;
  PinnedBuffer host_state_;          // a MinorCycleState, the best candidate, a count
  MinorCycleState& host_state() const { return *reinterpret_cast<MinorCycleState*>(host_state_.get()); }
  deconv::PeakCandidate& host_best() const {
    return *reinterpret_cast<deconv::PeakCandidate*>(host_state_.get() + sizeof(MinorCycleState));
  }
  unsigned long long& host_count() const {
    return *reinterpret_cast<unsigned long long*>(host_state_.get() + sizeof(MinorCycleState) +
                                                  sizeof(deconv::PeakCandidate));
  }
};

// deconv::set_residual_statistics on the device, to the same bits: the MAD sigma of the
// Stokes I residual, whose two medians are the elements of rank count / 2 of a radix
// sort (as deconv's kth_smallest picks them), and the largest |residual| over the four
// Stokes planes. Spares the host two passes over the plane and one over the images.
class ResidualStatistics {
 public:
  explicit ResidualStatistics(long long pixels);
  static std::size_t bytes_per_pixel();
  struct Values {
    double sigma, peak;
  };
  // Of residual [4][pixels]; synchronises.
  Values measure(const float* residual, cudaStream_t stream);

 private:
  long long pixels_;
  DeviceArray<float> values_, sorted_;
  DeviceArray<char> scratch_;
  DeviceArray<unsigned> peak_bits_;
  PinnedBuffer host_;  // the deviation and the peak's bits
};

}  // namespace spip::cuda::detail
