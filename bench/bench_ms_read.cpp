// Channel-block read throughput of MsReader: visibilities/s and MB/s of DATA read,
// for several block sizes, with the peak RSS of the process.
//   bench_ms_read MS [block_channels ...]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "spip/ms/ms_reader.hpp"

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MS [block_channels ...]\n", argv[0]);
    return 2;
  }
  std::vector<int> block_sizes;
  for (int k = 2; k < argc; ++k) block_sizes.push_back(std::stoi(argv[k]));
  if (block_sizes.empty()) block_sizes = {1, 16, 128};

  const spip::ms::MsReader reader(argv[1], spip::ms::Selection{});
  const auto& info = reader.info();
  const int num_chan = info.num_channels();
  const double corr_bytes = 8.0 * static_cast<double>(info.corr_types.size());
  std::printf("MS %s: %lld rows x %d channels x %zu correlations\n", argv[1],
              static_cast<long long>(info.num_rows), num_chan, info.corr_types.size());
  std::printf("%-14s %10s %14s %12s %14s\n", "block [chan]", "time [s]", "vis/s", "DATA MB/s", "peak RSS [MiB]");
  for (int block : block_sizes) {
    const auto start = std::chrono::steady_clock::now();
    double visibilities = 0;
    for (int c = 0; c < num_chan; c += block) {
      const spip::ms::VisBlock vis = reader.read(c, std::min(num_chan, c + block));
      visibilities += static_cast<double>(vis.num_rows()) * vis.num_channels();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-14d %10.3f %14.3e %12.1f %14.1f\n", block, seconds, visibilities / seconds,
                visibilities * corr_bytes / seconds / 1e6, peak_rss_mib());
  }
  return 0;
}
