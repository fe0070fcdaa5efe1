#pragma once
// The GPU peer of faraday::StokesPowerSums: the power sums of I, Q, U, V and P over a
// rank's channels accumulated on the device by add_power_terms() of spectrum_math.hpp,
// in the same [quantity][order][pixel] layout. No CUDA types cross this header.
#include <cstddef>
#include <memory>
#include <vector>

namespace spip::cuda {

class StokesPowerSums {
 public:
  // Device memory for images of `pixels`: the sums and one channel's planes.
  static std::size_t device_bytes(std::size_t pixels);

  StokesPowerSums(int device, std::size_t pixels);
  ~StokesPowerSums();
  StokesPowerSums(const StokesPowerSums&) = delete;
  StokesPowerSums& operator=(const StokesPowerSums&) = delete;

  // One channel's restored planes [I, Q, U, V][pixel] with its weight. Returns once
  // the planes are in pinned memory; upload and accumulation run on the class's own
  // stream.
  void add_channel(const float* restored, double weight);
  // The sums so far (waits for the last channel).
  std::vector<double> values() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spip::cuda
