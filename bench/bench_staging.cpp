// Host time per row of a channel on its way to the GPU imager. The points are prepared
// on the device from coordinates uploaded once per run, so per channel the host only
// copies the channel's weights and visibilities, once per run, from the rank's visibility
// block straight into the imager's pinned staging memory, and applies the imaging
// weights (pipeline::gather_channel, as the pipeline calls it).
// Runs without a GPU: the staging area is page-aligned ordinary memory here, which
// pinned memory is as fast to write. Prints the median of several runs per case.
//   bench_staging [rows [block_channels]]   (default 8,000,000 rows, 8 channels)
#include <omp.h>
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

#include "spip/imaging/geometry.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/stages/channel_gather.hpp"

namespace {

constexpr int repeats = 7;
constexpr int num_stokes = 4;

// A block of the layout MsReader::read makes, with uv tracks out to ~4 km at 150 MHz.
spip::ms::VisBlock make_block(std::size_t rows, int channels) {
  spip::ms::VisBlock block;
  block.chan_begin = 0;
  block.chan_end = channels;
  for (int c = 0; c < channels; ++c) block.freq_hz.push_back(140e6 + 0.1e6 * c);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  block.uvw_m.resize(3 * rows);
  block.time_mjd_s.assign(rows, 0.0);
  block.vis.resize(rows * channels * num_stokes);
  block.weight.resize(block.vis.size());
  block.nonfinite_samples.assign(channels, 0);
  for (double& x : block.uvw_m) x = 4000.0 * value(rng);
  for (float& w : block.weight) w = 1.0f + value(rng);
  for (auto& v : block.vis) v = {value(rng), value(rng)};
  return block;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

struct Case {
  const char* name;
  spip::Weighting weighting;
  int threads;
};

}  // namespace

int main(int argc, char** argv) {
  const std::size_t rows = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 8000000;
  const int channels = argc > 2 ? std::atoi(argv[2]) : 8;
  const std::vector<spip::ms::VisBlock> blocks{make_block(rows, channels)};
  const spip::pipeline::RowCoordinates coordinates(blocks.front().uvw_m);
  // A 4096^2 image of 3 arcsec, whose padded uv cells (4916^2) are the density grid of
  // uniform and Briggs weighting.
  const auto geometry = spip::imaging::ImageGeometry::make(4096, 3.0 / 206264.806, 1.2);
  // The GPU staging buffer's layout: coordinates, weights, visibilities.
  const std::size_t out_bytes = 3 * sizeof(double) + num_stokes * (sizeof(float) + sizeof(std::complex<float>));
  const std::size_t bytes = (rows * out_bytes + 4095) / 4096 * 4096;  // aligned_alloc takes whole alignments
  std::unique_ptr<char, decltype(&std::free)> staging(static_cast<char*>(std::aligned_alloc(4096, bytes)), &std::free);
  std::memset(staging.get(), 0, bytes);  // touched once, as the pinned buffer is when allocated
  spip::imaging::ChannelView area;
  area.rows = rows;
  area.uvw_m = reinterpret_cast<double*>(staging.get());
  area.weights = reinterpret_cast<float*>(staging.get() + 3 * rows * sizeof(double));

  std::printf("one channel of a block of %d channels x %zu rows gathered into the staging area\n", channels, rows);
  std::printf("(reference: one std::memcpy of the same planes on one thread; natural weighting unless named;\n"
              " 'all threads': the %d of OMP_NUM_THREADS, as on a GPU rank)\n", omp_get_max_threads());
  std::printf("%-28s %10s %10s %10s %10s %10s\n", "case", "B/row out", "ms", "ns/row", "GB/s out", "RSS MB");
  const int threads = omp_get_max_threads();
  // Briggs is the CPU backend's host weighting; a GPU rank stages natural weights and
  // weights on the device.
  const Case cases[] = {{"1 thread", spip::Weighting::natural, 1},
                        {"all threads", spip::Weighting::natural, threads},
                        {"Briggs, 1 thread", spip::Weighting::briggs, 1}};
  area.vis = reinterpret_cast<std::complex<float>*>(reinterpret_cast<char*>(area.weights) + num_stokes * rows * sizeof(float));
  for (const Case& c : cases) {
    spip::imaging::WeightingScheme scheme;
    scheme.mode = c.weighting;
    // gather_channel and the bare memcpy alternately, so that both see the same machine.
    std::vector<double> gather_s, memcpy_s;
    const spip::ms::VisBlock& block = blocks.front();
    const spip::ms::BandChannel channel{block.freq_hz[static_cast<std::size_t>(channels / 2)], 0, {{0, channels / 2}}};
    const std::size_t plane = block.index(0, channels / 2, 0), n = num_stokes * rows;
    for (int r = 0; r < repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      spip::pipeline::gather_channel(blocks, channel, coordinates, geometry, scheme, area, c.threads);
      gather_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      start = std::chrono::steady_clock::now();
      std::memcpy(area.uvw_m, block.uvw_m.data(), 3 * rows * sizeof(double));
      std::memcpy(area.weights, &block.weight[plane], n * sizeof(float));
      std::memcpy(area.vis, &block.vis[plane], n * sizeof(std::complex<float>));
      memcpy_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    for (auto [what, seconds] : {std::pair{c.name, &gather_s}, std::pair{"  memcpy of the same bytes", &memcpy_s}}) {
      std::nth_element(seconds->begin(), seconds->begin() + repeats / 2, seconds->end());
      const double median = (*seconds)[repeats / 2];
      std::printf("%-28s %10zu %10.3f %10.2f %10.2f %10.0f\n", what, out_bytes, median * 1e3,
                  median * 1e9 / static_cast<double>(rows), static_cast<double>(out_bytes * rows) / median / 1e9,
                  peak_rss_mb());
    }
  }
  return 0;
}
