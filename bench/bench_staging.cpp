// Host time per row of the GPU imager's stage(): since the points are prepared on the
// device, the host only copies a channel's coordinates, weights and (pass 2)
// visibilities into the pinned staging buffer, the copies stage() makes, in its order.
// Runs without a GPU: the staging buffer is ordinary page-aligned memory here, which
// pinned memory is as fast to write. Prints the median of several runs per size.
//   bench_staging [rows ...]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "spip/cuda/channel_imager.hpp"

namespace {

constexpr int repeats = 7;

spip::cuda::ChannelInput make_channel(std::size_t rows) {
  spip::cuda::ChannelInput input;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  input.uvw_lambda.resize(3 * rows);
  input.weights.resize(4 * rows);
  input.vis.resize(4 * rows);
  for (double& x : input.uvw_lambda) x = 1000.0 * value(rng);
  for (float& w : input.weights) w = 1.0f + value(rng);
  for (auto& v : input.vis) v = {value(rng), value(rng)};
  return input;
}

// The copies of ChannelImager::stage(): coordinates, weights, then visibilities if any.
std::size_t stage_copies(const spip::cuda::ChannelInput& input, bool visibilities, char* staging) {
  const std::size_t rows = input.uvw_lambda.size() / 3;
  char* out = staging;
  auto copy = [&](const void* data, std::size_t bytes) {
    std::memcpy(out, data, bytes);
    out += bytes;
  };
  copy(input.uvw_lambda.data(), 3 * rows * sizeof(double));
  copy(input.weights.data(), 4 * rows * sizeof(float));
  if (visibilities) copy(input.vis.data(), 4 * rows * sizeof(std::complex<float>));
  return static_cast<std::size_t>(out - staging);
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int a = 1; a < argc; ++a) sizes.push_back(std::strtoull(argv[a], nullptr, 10));
  if (sizes.empty()) sizes = {88704, 1000000, 8000000};
  std::printf("%10s %6s %10s %10s %10s %10s %10s\n", "rows", "pass", "B/row", "ms", "ns/row", "GB/s", "RSS MB");
  for (std::size_t rows : sizes) {
    const spip::cuda::ChannelInput input = make_channel(rows);
    const std::size_t bytes = rows * (3 * sizeof(double) + 4 * sizeof(float) + 4 * sizeof(std::complex<float>));
    std::unique_ptr<char, decltype(&std::free)> staging(static_cast<char*>(std::aligned_alloc(4096, bytes)), &std::free);
    std::memset(staging.get(), 0, bytes);  // touched once, as the pinned buffer is when allocated
    for (int pass : {1, 2}) {
      std::vector<double> seconds;
      std::size_t copied = 0;
      for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        copied = stage_copies(input, pass == 2, staging.get());
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::nth_element(seconds.begin(), seconds.begin() + repeats / 2, seconds.end());
      const double median = seconds[repeats / 2];
      std::printf("%10zu %6d %10zu %10.3f %10.2f %10.2f %10.0f\n", rows, pass, copied / rows, median * 1e3,
                  median * 1e9 / static_cast<double>(rows), static_cast<double>(copied) / median / 1e9, peak_rss_mb());
    }
  }
  return 0;
}
