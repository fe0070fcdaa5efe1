// The GPU backend's rates on a Measurement Set, each beside its reference on the same
// run: Stokes visibilities gridded per second (GPU DeviceImager vs the CPU ChannelImager, and
// the GPU's gridding and degridding kernels alone), FFTs
// per second (cuFFT alone), Faraday samples per second (spip's RM synthesis vs a bare
// cublasCgemm of the same shape), the share of upload time hidden by the second
// stream, and pixels per second through RM synthesis, RM-CLEAN and the peak fit (GPU
// slab vs the CPU slab). Without a usable GPU it says so and exits 0. With DUMP, the
// last channel's rows are written there for bench/gpu_baselines.py (ducc0 on the same
// points): rows and frequency (int64, float64), then uvw in metres [rows][3] (float64),
// natural weights [rows][4] (float32) and visibilities [rows][4] (complex64); "-" for
// none. The accuracy is 1e-4 unless given.
//   bench_gpu MS [channels] [image_size] [scale_arcsec] [DUMP] [accuracy]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <fstream>
#include <stdexcept>
#include <future>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "spip/common/freed_memory.hpp"
#include "spip/cuda/device_imager.hpp"
#include "spip/cuda/device.hpp"
#include "spip/cuda/device_rates.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/faraday/rm_synthesis.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/ms/ms_reader.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr double speed_of_light = 299792458.0;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// The channels as the pipeline hands them over: the rows' coordinates in metres, and
// per channel its frequency, natural weights and visibilities.
struct Channels {
  std::vector<double> uvw_m, freq_hz;
  std::vector<std::vector<float>> weights;
  std::vector<std::vector<std::complex<float>>> vis;
  std::size_t rows() const { return uvw_m.size() / 3; }
};

Channels read_channels(const std::string& path, int channels) {
  const spip::ms::MsReader reader(path, spip::ms::Selection{});
  const spip::ms::VisBlock block = reader.read(0, channels);
  Channels out{block.uvw_m, block.freq_hz, {}, {}};
  const std::size_t n = 4 * block.num_rows();
  for (int c = 0; c < channels; ++c) {
    const std::size_t plane = block.index(0, c, 0);
    out.weights.emplace_back(block.weight.begin() + plane, block.weight.begin() + plane + n);
    out.vis.emplace_back(block.vis.begin() + plane, block.vis.begin() + plane + n);
  }
  return out;
}

void dump_channel(const std::string& path, const Channels& input, int c) {
  std::ofstream out(path, std::ios::binary);
  const auto rows = static_cast<std::int64_t>(input.rows());
  auto write = [&](const auto* data, std::size_t count) {
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(*data)));
  };
  write(&rows, 1);
  write(&input.freq_hz[c], 1);
  write(input.uvw_m.data(), input.uvw_m.size());
  write(input.weights[c].data(), input.weights[c].size());
  write(input.vis[c].data(), input.vis[c].size());
  if (!out) throw std::runtime_error("cannot write " + path);
}

void row(const char* what, double seconds, double rate, const char* unit, const char* reference) {
  std::printf("%-34s %10.4f %14.4g %-22s %s\n", what, seconds, rate, unit, reference);
}

}  // namespace

int main(int argc, char** argv) {
  spip::share_one_heap();  // as spip does, GPU ranks included
  spip::keep_freed_memory(spip::kept_heap_bytes(std::numeric_limits<double>::max()));
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MS [channels] [image_size] [scale_arcsec] [DUMP] [accuracy]\n", argv[0]);
    return 2;
  }
  const int channels = argc > 2 ? std::stoi(argv[2]) : 8;
  const int size = argc > 3 ? std::stoi(argv[3]) : 512;
  const double scale_rad = (argc > 4 ? std::stod(argv[4]) : 20.0) / 206264.806;
  const spip::cuda::DeviceProbe probe = spip::cuda::probe_devices();
  if (probe.devices.empty()) {
    std::printf("no usable GPU (%s): GPU benchmark not run\n", probe.reason.c_str());
    return 0;
  }
  const spip::cuda::DeviceInfo& device = probe.devices.front();
  const double accuracy = argc > 6 ? std::stod(argv[6]) : 1e-4;
  const auto geometry = spip::imaging::ImageGeometry::make(size, scale_rad, spip::imaging::oversampling_for(accuracy, 1.2));
  const Channels input = read_channels(argv[1], channels);
  spip::imaging::WeightingScheme briggs;
  briggs.mode = spip::Weighting::briggs;
  const std::vector<double>& freq = input.freq_hz;
  const std::size_t count = input.rows();
  // Dirty images in four Stokes parameters and the PSF: five gridded values per visibility.
  const double gridded = 5.0 * static_cast<double>(count) * channels;
  spip::CleanConfig dirty_only;
  std::printf("GPU %d: %s; %d channels x %zu visibilities, %d^2 image on a %d^2 grid, accuracy %g\n", device.index,
              device.name.c_str(), channels, count, size, geometry.grid_size, accuracy);
  std::printf("%-34s %10s %14s %-22s %s\n", "stage", "time [s]", "rate", "unit", "reference (same run)");

  // CPU reference: the same channels through the CPU imager, Briggs-weighted on the host.
  spip::imaging::ChannelImager cpu(geometry, accuracy, true);
  auto start = Clock::now();
  for (int c = 0; c < channels; ++c) {
    const double inv_lambda = freq[c] / speed_of_light;
    std::vector<float> weights = input.weights[c];
    spip::imaging::apply_weighting(geometry, briggs, input.uvw_m.data(), inv_lambda, count, 4, weights.data());
    std::vector<double> uvw_lambda(input.uvw_m.size());
    for (std::size_t i = 0; i < uvw_lambda.size(); ++i) uvw_lambda[i] = input.uvw_m[i] * inv_lambda;
    cpu.set_data(std::move(uvw_lambda), std::move(weights));
    spip::deconv::image_channel(cpu, input.vis[c], dirty_only);
  }
  const double cpu_s = seconds_since(start);

  // GPU: the next channel written into pinned memory and uploaded on a helper thread
  // while the current one is imaged, as the pipeline does; Briggs-weighted on the device.
  spip::cuda::DeviceImager gpu(device.index, geometry, accuracy, true, count, briggs);
  auto stage = [&](int c) {
    const spip::cuda::ChannelView area = gpu.staging_area(count);
    std::copy(input.uvw_m.begin(), input.uvw_m.end(), area.uvw_m);
    std::copy(input.weights[c].begin(), input.weights[c].end(), area.weights);
    std::copy(input.vis[c].begin(), input.vis[c].end(), area.vis);
    gpu.upload(freq[c]);
  };
  spip::deconv::ChannelImages last;
  start = Clock::now();
  stage(0);
  for (int c = 0; c < channels; ++c) {
    gpu.next();
    std::future<void> staging;
    if (c + 1 < channels) staging = std::async(std::launch::async, stage, c + 1);
    last = spip::deconv::clean_channel(*gpu.clean_backend(), dirty_only, geometry, 0.0);
    if (staging.valid()) staging.get();
  }
  const double gpu_s = seconds_since(start);
  if (argc > 5 && std::string(argv[5]) != "-") dump_channel(argv[5], input, channels - 1);
  char reference[96];
  std::snprintf(reference, sizeof reference, "CPU backend %.4g /s (%.3f s)", gridded / cpu_s, cpu_s);
  row("dirty IQUV + PSF, gridded", gpu_s, gridded / gpu_s, "values/s (5 a row)", reference);

  const spip::cuda::TransferStats t = gpu.transfer_stats();
  std::snprintf(reference, sizeof reference, "%.1f of %.1f ms uploads hidden", t.hidden_ms, t.upload_ms);
  row("upload hidden by the second stream", 1e-3 * t.upload_ms, t.upload_ms > 0 ? t.hidden_ms / t.upload_ms : 0.0,
      "fraction", reference);
  // Where an end-to-end channel's time goes: device events for the upload, weighting
  // and preparation, host wall time for the backend's steps that wait on the device.
  const double channel_s = gpu_s / channels;
  for (const auto& [name, ms] :
       {std::pair{"  per channel: upload", t.upload_ms}, std::pair{"  per channel: weighting", t.weighting_ms},
        std::pair{"  per channel: preparation", t.preparation_ms},
        std::pair{"  per channel: first images (host)", t.invert_ms},
        std::pair{"  per channel: noise (host)", t.noise_ms}, std::pair{"  per channel: download (host)", t.fetch_ms},
        std::pair{"    of which the staged copies", t.images_download_ms}})
    row(name, 1e-3 * ms / t.channels, 1e-3 * ms / t.channels / channel_s, "of an end-to-end channel", "");

  // The driver's own host steps on a channel's images (deconv::clean_channel's): the
  // beam fit and the sidelobe checks on the PSF; and the residual's statistics as the CPU
  // backend makes them (the GPU makes them on the device, within the download).
  start = Clock::now();
  (void)spip::imaging::fit_beam(last.psf.data(), geometry);
  const double fit_s = seconds_since(start);
  start = Clock::now();
  (void)spip::deconv::degenerate_sidelobe(last.psf.data(), size);
  (void)spip::deconv::far_sidelobe(last.psf.data(), size);
  const double sidelobes_s = seconds_since(start);
  start = Clock::now();
  spip::deconv::set_residual_statistics(last);
  const double statistics_s = seconds_since(start);
  row("  per channel: beam fit (host)", fit_s, fit_s / channel_s, "of an end-to-end channel", "");
  row("  per channel: PSF sidelobes (host)", sidelobes_s, sidelobes_s / channel_s, "of an end-to-end channel", "");
  row("  residual statistics on the host", statistics_s, statistics_s / channel_s, "of an end-to-end channel", "");

  // The stages on the last channel, each waited for (device events).
  const spip::cuda::KernelTimes k = gpu.time_kernels();
  const double kernel_vis = static_cast<double>(k.visibilities);
  const double cell_updates = static_cast<double>(k.point_planes) * k.support * k.support * k.lanes;
  // A complex cell update is two multiply-adds (the value's parts times the kernel
  // product) and the kernel product one multiply: 6 flops.
  const double peak = spip::cuda::fp32_peak_flops(device.index);
  std::snprintf(reference, sizeof reference, "%d w-planes in %d batch(es), W %d, %d lanes, %.3g point-planes",
                k.planes, k.batches, k.support, k.lanes, static_cast<double>(k.point_planes));
  row("gridding kernel (IQUV + PSF)", 1e-3 * k.grid_ms, kernel_vis / (1e-3 * k.grid_ms), "Stokes visibilities/s",
      reference);
  std::snprintf(reference, sizeof reference, "%.2f%% of the FP32 peak, %.3g flop/s",
                100.0 * 6.0 * cell_updates / (1e-3 * k.grid_ms) / peak, peak);
  row("  complex cell updates", 1e-3 * k.grid_ms, cell_updates / (1e-3 * k.grid_ms), "updates/s", reference);
  const double stages_ms = k.prepare_ms + k.values_ms + k.items_ms + k.grid_ms + k.fft_ms + k.finish_ms;
  row("one channel's stages on the device", 1e-3 * stages_ms, kernel_vis / (1e-3 * stages_ms), "Stokes visibilities/s",
      "each stage waited for; shares below");
  for (const auto& [name, ms] : {std::pair{"  point preparation", k.prepare_ms}, std::pair{"  lane values", k.values_ms},
                                 std::pair{"  work items", k.items_ms}, std::pair{"  gridding", k.grid_ms},
                                 std::pair{"  batched FFTs", k.fft_ms}, std::pair{"  screens, correction", k.finish_ms}})
    row(name, 1e-3 * ms, ms / stages_ms, "share", "");
  row("model prediction (fill, FFT, degrid)", 1e-3 * k.degrid_ms, kernel_vis / (1e-3 * k.degrid_ms),
      "Stokes visibilities/s", "");

  const double fft_s = spip::cuda::seconds_per_fft(device.index, geometry.grid_size, 2, 50);
  std::snprintf(reference, sizeof reference, "cuFFT C2C %d^2, batches of 2", geometry.grid_size);
  row("FFT", fft_s, 1.0 / fft_s, "FFTs/s", reference);

  // RM synthesis of the whole image as one slab, with the demo's Faraday axis.
  spip::FaradayConfig faraday;
  faraday.phi_max = 60;
  faraday.dphi = 0.5;
  const auto setup = spip::faraday::make_setup(freq, std::vector<double>(freq.size(), 1.0), faraday);
  const auto a = spip::faraday::synthesis_matrix(setup, setup.axis);
  const int pixels = static_cast<int>(geometry.pixels()), phi = setup.axis.count;
  std::vector<std::complex<float>> p(static_cast<std::size_t>(channels) * pixels, {1.0f, 0.5f});
  std::vector<std::complex<float>> f(static_cast<std::size_t>(phi) * pixels);
  spip::cuda::synthesise(device.index, a.data(), phi, channels, p.data(), pixels, f.data());  // warm-up
  start = Clock::now();
  spip::cuda::synthesise(device.index, a.data(), phi, channels, p.data(), pixels, f.data());
  const double synthesis_s = seconds_since(start);
  const double cgemm_s = spip::cuda::seconds_per_cgemm(device.index, pixels, phi, channels, 10);
  const double samples = static_cast<double>(pixels) * phi;
  std::snprintf(reference, sizeof reference, "bare cublasCgemm %.4g /s (%.2f TFLOP/s)", samples / cgemm_s,
                8.0 * samples * channels / cgemm_s / 1e12);
  row("RM synthesis (with transfers)", synthesis_s, samples / synthesis_s, "Faraday samples/s", reference);
  // As the Faraday stage runs it: the spectra up, the cube kept for RM-CLEAN.
  start = Clock::now();
  spip::cuda::synthesise(device.index, a.data(), phi, channels, p.data(), pixels, nullptr);
  const double kept_s = seconds_since(start);
  std::snprintf(reference, sizeof reference, "%.1f%% of the bare product", 100.0 * cgemm_s / kept_s);
  row("  the same, cube kept on the device", kept_s, samples / kept_s, "Faraday samples/s", reference);
  // What the link allows: its rates (a 256 MiB copy), and the bare product's share of
  // the time when the spectra and the cube move at the pinned rate and nothing overlaps.
  const spip::cuda::LinkRates link = spip::cuda::link_rates(device.index, std::size_t{256} << 20, 5);
  for (const auto& [name, up, down] : {std::tuple{"host-device link, pinned", link.pinned_up, link.pinned_down},
                                       std::tuple{"  pageable (the driver's staging)", link.pageable_up, link.pageable_down},
                                       std::tuple{"  spip's staged copy", link.staged_up, link.staged_down}}) {
    std::snprintf(reference, sizeof reference, "up; down %.3g GB/s", 1e-9 * down);
    row(name, 0.0, 1e-9 * up, "GB/s", reference);
  }
  const double spectra_bytes = 8.0 * channels * pixels, cube_bytes = 8.0 * samples;
  const double floor_s = spectra_bytes / link.pinned_up + cube_bytes / link.pinned_down;
  std::snprintf(reference, sizeof reference, "%.3g GB up, %.3g GB down: at most %.1f%% of the bare product",
                1e-9 * spectra_bytes, 1e-9 * cube_bytes, 100.0 * cgemm_s / (floor_s + cgemm_s));
  row("  link floor of RM synthesis", floor_s + cgemm_s, samples / (floor_s + cgemm_s), "Faraday samples/s", reference);
  const double kept_floor_s = spectra_bytes / link.pinned_up;
  std::snprintf(reference, sizeof reference, "spectra up: at most %.1f%% of the bare product",
                100.0 * cgemm_s / (kept_floor_s + cgemm_s));
  row("  link floor, cube kept", kept_floor_s + cgemm_s, samples / (kept_floor_s + cgemm_s), "Faraday samples/s",
      reference);

  // The per-pixel stage on slabs of 16384 and 262144 pixels (a row group of this image
  // holds about 23,000), each pixel with a Faraday-thin source: a thread per pixel
  // fills a GPU only on the larger.
  const auto rmsf_double = spip::faraday::rmsf_for_clean(setup);
  const auto settings = spip::faraday::spectrum_settings(setup, 1e-3, {0.1, 5e-3, 1000, false});
  std::vector<int> slabs{std::min(pixels, 16384)};
  if (pixels > 16384) slabs.push_back(std::min(pixels, 262144));
  for (const int slab_pixels : slabs) {
    std::vector<std::complex<float>> thin(static_cast<std::size_t>(channels) * slab_pixels);
    for (int c = 0; c < channels; ++c)
      for (int x = 0; x < slab_pixels; ++x)
        thin[static_cast<std::size_t>(c) * slab_pixels + x] = std::polar(0.1f, static_cast<float>(
            2.0 * (0.3 + (x % 80 - 40) * setup.lambda_sq[c])));
    start = Clock::now();
    const auto cpu_slab = spip::faraday::synthesise_slab(a, channels, thin.data(), slab_pixels, rmsf_double, settings);
    const double cpu_slab_s = seconds_since(start);
    start = Clock::now();
    const auto gpu_slab =
        spip::cuda::synthesise_slab(device.index, a, channels, thin.data(), slab_pixels, rmsf_double, settings);
    const double gpu_slab_s = seconds_since(start);
    std::snprintf(reference, sizeof reference, "%d pixels; CPU slab %.4g /s (%.3f s); %lld vs %lld iterations",
                  slab_pixels, slab_pixels / cpu_slab_s, cpu_slab_s, gpu_slab.iterations, cpu_slab.iterations);
    row("RM-CLEAN, peak fit (w. transfers)", gpu_slab_s, slab_pixels / gpu_slab_s, "pixels/s", reference);
    // As a run that writes no Faraday cubes (faraday.cubes none): only the maps come back.
    start = Clock::now();
    (void)spip::cuda::synthesise_slab(device.index, a, channels, thin.data(), slab_pixels, rmsf_double, settings, {},
                                      {false, false});
    const double maps_only_s = seconds_since(start);
    row("  the same, maps only back", maps_only_s, slab_pixels / maps_only_s, "pixels/s", "");
  }
  std::printf("peak RSS %.0f MiB\n", peak_rss_mib());
  return 0;
}
