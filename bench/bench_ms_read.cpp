// Channel-block read throughput of MsReader, for one block size: visibilities/s, MB/s
// of DATA read, and MB/s of the main table's files that the blocks touch (a block
// touches the fraction of each file that its channel tiles cover), with the peak RSS.
//   bench_ms_read MS block_channels   (0: describe the MS only)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "spip/ms/ms_reader.hpp"

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// The main table's storage files (table.f*), where its columns' data lie.
double table_file_bytes(const std::string& ms) {
  double bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ms))
    if (entry.is_regular_file() && entry.path().filename().string().rfind("table.f", 0) == 0)
      bytes += static_cast<double>(entry.file_size());
  return bytes;
}

// The fraction of the channel axis whose tiles hold channels [begin, end).
double touched_fraction(int begin, int end, int tile, int channels) {
  if (tile <= 0) return static_cast<double>(end - begin) / channels;
  const int first = begin / tile * tile, last = std::min(channels, (end + tile - 1) / tile * tile);
  return static_cast<double>(last - first) / channels;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MS block_channels\n", argv[0]);
    return 2;
  }
  const int block = std::stoi(argv[2]);
  const spip::ms::MsReader reader(argv[1], spip::ms::Selection{});
  const auto& info = reader.info();
  const int num_chan = info.num_channels();
  const double corr_bytes = 8.0 * static_cast<double>(info.corr_types.size());
  const double file_bytes = table_file_bytes(argv[1]);
  if (block <= 0) {
    std::printf("MsReader on %s: %lld rows x %d channels x %zu correlations, tiles of %d channels, %.0f MB of table files\n",
                argv[1], static_cast<long long>(info.num_rows), num_chan, info.corr_types.size(),
                info.data_tile_channels, file_bytes / 1e6);
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  double visibilities = 0, touched = 0;
  for (int c = 0; c < num_chan; c += block) {
    const int end = std::min(num_chan, c + block);
    const spip::ms::VisBlock vis = reader.read(c, end);
    visibilities += static_cast<double>(vis.num_rows()) * vis.num_channels();
    touched += file_bytes * touched_fraction(c, end, info.data_tile_channels, num_chan);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-8d %10.3f %12.3e %11.1f %12.1f %10.1f\n", block, seconds, visibilities / seconds,
              visibilities * corr_bytes / seconds / 1e6, touched / seconds / 1e6, peak_rss_mib());
  return 0;
}
