// One channel's CPU imaging, as the pipeline does it for a dirty run: the rows' layout
// on the grid (set_data), the dirty I, Q, U, V (dirty) and the PSF, each timed, over
// REPEATS runs on the OpenMP threads OMP_NUM_THREADS allows. With DUMP, the channel's
// rows are written there for bench/gpu_baselines.py (ducc0 on the same points, same
// layout as bench_gpu's); "-" for none. Briggs 0 weighting, accuracy 1e-4 unless given.
//   bench_imaging MS [channel] [image_size] [scale_arcsec] [repeats] [DUMP] [accuracy]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "spip/common/freed_memory.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/direct_predict.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/ms/ms_reader.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr double speed_of_light = 299792458.0;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void dump_channel(const std::string& path, const spip::ms::VisBlock& block) {
  std::ofstream out(path, std::ios::binary);
  const auto rows = static_cast<std::int64_t>(block.num_rows());
  auto write = [&](const auto* data, std::size_t count) {
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(*data)));
  };
  write(&rows, 1);
  write(block.freq_hz.data(), 1);
  write(block.uvw_m.data(), block.uvw_m.size());
  write(block.weight.data(), 4 * block.num_rows());
  write(block.vis.data(), 4 * block.num_rows());
  if (!out) throw std::runtime_error("cannot write " + path);
}

// "median (min-max)" of `times`.
std::string spread(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const std::size_t n = times.size();
  const double median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  char text[64];
  std::snprintf(text, sizeof text, "%.4f (%.4f-%.4f)", median, times.front(), times.back());
  return text;
}

// A CLEAN model's visibilities, degridded and evaluated directly, for models of point
// components in I, Q, U and V at `count` pixels spread over the image (a CLEAN model
// of tens to thousands of components): the figures that set direct_predict_limit.
void print_predict_times(const spip::imaging::ChannelImager& imager, const spip::imaging::ImageGeometry& geometry,
                         int repeats) {
  const std::size_t pixels = geometry.pixels();
  std::vector<std::complex<float>> vis(4 * imager.num_visibilities());
  for (std::size_t count : {16, 64, 256, 1024}) {
    std::vector<float> model(4 * pixels, 0.0f);
    for (std::size_t c = 0; c < count; ++c) {
      const std::size_t pixel = (c * 7919 * 104729) % pixels;
      for (int s = 0; s < 4; ++s) model[s * pixels + pixel] = 1.0f / static_cast<float>(s + 1);
    }
    const auto components = spip::imaging::model_components(model.data(), 4, geometry, true);
    std::vector<double> gridded_s, direct_s;
    for (int run = 0; run < repeats; ++run) {
      auto start = Clock::now();
      imager.gridder().degrid(model.data(), 4, vis.data());
      gridded_s.push_back(seconds_since(start));
      start = Clock::now();
      spip::imaging::predict_direct(components, 4, imager.uvw_lambda(), imager.num_visibilities(), vis.data());
      direct_s.push_back(seconds_since(start));
    }
    std::printf("predict IQUV, %4zu components: degridded %s, direct %s\n", components.size(),
                spread(gridded_s).c_str(), spread(direct_s).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  spip::share_one_heap();  // as spip does on a CPU rank
  spip::keep_freed_memory(spip::kept_heap_bytes(std::numeric_limits<double>::max()));
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MS [channel] [image_size] [scale_arcsec] [repeats] [DUMP] [accuracy]\n", argv[0]);
    return 2;
  }
  const int channel = argc > 2 ? std::stoi(argv[2]) : 0;
  const int size = argc > 3 ? std::stoi(argv[3]) : 1024;
  const double scale_arcsec = argc > 4 ? std::stod(argv[4]) : 15.0;
  const int repeats = argc > 5 ? std::stoi(argv[5]) : 5;
  const double accuracy = argc > 7 ? std::stod(argv[7]) : 1e-4;
  const auto geometry = spip::imaging::ImageGeometry::make(size, scale_arcsec / 206264.806,
                                                           spip::imaging::oversampling_for(accuracy, 1.2));
  const spip::ms::MsReader reader(argv[1], spip::ms::Selection{});
  const spip::ms::VisBlock block = reader.read(channel, channel + 1);
  if (argc > 6 && std::string(argv[6]) != "-") dump_channel(argv[6], block);
  const std::size_t count = block.num_rows();
  const double inv_lambda = block.freq_hz[0] / speed_of_light;
  spip::imaging::WeightingScheme briggs;
  briggs.mode = spip::Weighting::briggs;

  spip::imaging::ChannelImager imager(geometry, accuracy, true);
  std::vector<float> images(4 * geometry.pixels()), psf(geometry.pixels());
  std::vector<double> layout_s, dirty_s, psf_s, total_s;
  for (int run = 0; run < repeats; ++run) {
    const auto start = Clock::now();
    std::vector<float> weights(block.weight.begin(), block.weight.begin() + 4 * count);
    spip::imaging::apply_weighting(geometry, briggs, block.uvw_m.data(), inv_lambda, count, 4, weights.data());
    std::vector<double> uvw_lambda(block.uvw_m.size());
    for (std::size_t i = 0; i < uvw_lambda.size(); ++i) uvw_lambda[i] = block.uvw_m[i] * inv_lambda;
    imager.set_data(std::move(uvw_lambda), std::move(weights));
    layout_s.push_back(seconds_since(start));
    const auto dirty_start = Clock::now();
    imager.dirty(block.vis.data(), images.data());
    dirty_s.push_back(seconds_since(dirty_start));
    const auto psf_start = Clock::now();
    imager.psf(psf.data());
    psf_s.push_back(seconds_since(psf_start));
    total_s.push_back(seconds_since(start));
  }
  std::printf("spip CPU imaging, %d threads, %zu rows, %d^2 of %g\" on a %d^2 grid, %d w-planes, accuracy %g, %d runs\n",
              omp_get_max_threads(), count, size, scale_arcsec, geometry.grid_size, imager.gridder().num_w_planes(),
              accuracy, repeats);
  std::printf("%-36s %s\n", "stage", "time [s], median (range)");
  std::printf("%-36s %s\n", "weighting and layout (set_data)", spread(layout_s).c_str());
  std::printf("%-36s %s\n", "dirty I, Q, U, V", spread(dirty_s).c_str());
  std::printf("%-36s %s\n", "PSF", spread(psf_s).c_str());
  std::printf("%-36s %s\n", "spip dirty IQUV + PSF", spread(total_s).c_str());
  print_predict_times(imager, geometry, repeats);
  return 0;
}
