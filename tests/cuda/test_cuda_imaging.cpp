// cuda::DeviceImager against the CPU backend on a channel of the OSKAR sample MS:
// dirty images, PSF, and the cleaned model, residual and restored images.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "gpu_test_main.hpp"
#include "spip/common/constants.hpp"
#include "spip/cuda/device_imager.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/es_kernel.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/ms/ms_reader.hpp"

namespace spip {
namespace {

// One channel of the sample as the pipeline hands it over: the rows' coordinates in
// metres, the channel's frequency, weights and visibilities in the block's plane.
struct Channel {
  std::vector<double> uvw_m;
  double freq_hz = 0;
  std::vector<float> weights;
  std::vector<std::complex<float>> vis;
};

Channel read_channel(int channel) {
  const ms::MsReader reader(std::string(SPIP_TEST_DATA) + "/oskar_small.ms", ms::Selection{});
  ms::VisBlock block = reader.read(channel, channel + 1);
  return Channel{std::move(block.uvw_m), block.freq_hz[0], std::move(block.weight), std::move(block.vis)};
}

double max_abs(const std::vector<float>& values) {
  double peak = 0;
  for (float v : values) peak = std::max(peak, static_cast<double>(std::abs(v)));
  return peak;
}

// max |gpu - cpu| over `scale`.
double relative_difference(const std::vector<float>& cpu, const std::vector<float>& gpu, double scale) {
  EXPECT_EQ(cpu.size(), gpu.size());
  double worst = 0;
  for (std::size_t i = 0; i < cpu.size() && i < gpu.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(cpu[i] - gpu[i])));
  return scale > 0 ? worst / scale : worst;
}

// W-stacking on or off, and the w-planes the GPU grids at once (0: all that fit; 2:
// batches whose images add up over several passes).
class CudaImaging : public testing::TestWithParam<std::tuple<bool, int>> {};

// The dirty images and the PSF agree to 1e-5 of their peaks. The GPU grids with
// atomics in no fixed order and with FMA, so its residuals differ from the CPU's in
// their last bits, and where two residual pixels nearly tie Hogbom may take the other:
// CLEAN's products then agree to 1e-3 of the restored peak and its counts nearly.
TEST_P(CudaImaging, MatchesTheCpuBackendUpToNearTiesInClean) {
  // The grid the pipeline chooses for this accuracy: at 1.2 the grid correction
  // amplifies float32 rounding near the corners to ~3e-4 of the peak on either backend.
  const double accuracy = 1e-5;
  const imaging::ImageGeometry geometry =
      imaging::ImageGeometry::make(256, 40.0 / 206264.806, imaging::oversampling_for(accuracy, 1.2));
  Channel input = read_channel(3);
  const std::size_t rows = input.uvw_m.size() / 3;
  const double inv_lambda = input.freq_hz / speed_of_light;
  imaging::WeightingScheme briggs;
  briggs.mode = Weighting::briggs;
  // The GPU gets the natural weights and makes the Briggs weights itself.
  const std::vector<float> natural = input.weights;
  imaging::apply_weighting(geometry, briggs, input.uvw_m.data(), inv_lambda, rows, 4, input.weights.data());
  std::vector<double> uvw_lambda(input.uvw_m.size());
  for (std::size_t i = 0; i < uvw_lambda.size(); ++i) uvw_lambda[i] = input.uvw_m[i] * inv_lambda;
  const auto [wstacking, plane_batch] = GetParam();
  imaging::ChannelImager cpu_imager(geometry, accuracy, wstacking);
  cpu_imager.set_data(uvw_lambda, input.weights);

  // The channel written into the pinned staging area with its coordinates in metres,
  // scaled on the device, as the pipeline does.
  cuda::DeviceImager gpu_imager(test::gpu_device, geometry, accuracy, wstacking, rows, briggs, nullptr, plane_batch);
  const cuda::ChannelView area = gpu_imager.staging_area(rows);
  ASSERT_EQ(area.rows, rows);
  std::copy(input.uvw_m.begin(), input.uvw_m.end(), area.uvw_m);
  std::copy(natural.begin(), natural.end(), area.weights);
  std::copy(input.vis.begin(), input.vis.end(), area.vis);
  gpu_imager.upload(input.freq_hz);
  gpu_imager.next();
  if (plane_batch > 0) {
    ASSERT_GT(gpu_imager.num_w_planes(), plane_batch);  // two batches or more
  }
  // The device's Briggs weights sum as the host's, up to float rounding where its atomic adds
  // make a density differ in its last bits.
  for (int s = 0; s < 4; ++s)
    EXPECT_NEAR(gpu_imager.weight_sum(s), cpu_imager.weight_sum(s), 1e-6 * cpu_imager.weight_sum(s)) << s;

  // The one major-cycle driver over each backend's primitives, in each minor-cycle mode.
  CleanConfig hogbom;
  hogbom.niter = 300;
  hogbom.threshold_jy = 0.01;
  hogbom.subminor = false;
  CleanConfig subminor = hogbom;
  subminor.subminor = true;
  CleanConfig masked = subminor;
  masked.threshold_jy = 0;
  masked.niter = 3000;
  masked.auto_threshold = 1;
  masked.auto_mask = 3;
  const struct {
    const char* name;
    CleanConfig clean;
  } modes[] = {{"hogbom", hogbom}, {"subminor", subminor}, {"auto_mask", masked}};
  for (const auto& [mode, clean] : modes) {
    SCOPED_TRACE(mode);
    const deconv::ChannelImages cpu = deconv::image_channel(cpu_imager, input.vis, clean);
    const deconv::ChannelImages gpu = deconv::clean_channel(*gpu_imager.clean_backend(), clean, geometry, 0.0);
    EXPECT_GT(cpu.iterations, 50);  // deep enough for near ties to arise
    EXPECT_LE(std::abs(gpu.iterations - cpu.iterations), std::max(2.0, 0.02 * cpu.iterations));
    EXPECT_LE(std::abs(gpu.major_cycles - cpu.major_cycles), 1);
    // Both restored with the CPU's fitted beam; the fitted beams are compared below.
    ASSERT_TRUE(cpu.fitted_beam && gpu.fitted_beam);
    const std::vector<float> cpu_restored =
        deconv::restore_channel(cpu.model.data(), cpu.residual.data(), geometry, *cpu.fitted_beam);
    const std::vector<float> gpu_restored =
        deconv::restore_channel(gpu.model.data(), gpu.residual.data(), geometry, *cpu.fitted_beam);
    const double restored_peak = max_abs(cpu_restored);
    const struct {
      const char* name;
      const std::vector<float>&a, &b;
      double scale, tolerance;
    } products[] = {{"dirty", cpu.dirty, gpu.dirty, max_abs(cpu.dirty), 1e-5},
                    {"psf", cpu.psf, gpu.psf, max_abs(cpu.psf), 1e-5},
                    {"model", cpu.model, gpu.model, restored_peak, 1e-3},
                    {"residual", cpu.residual, gpu.residual, restored_peak, 1e-3},
                    {"restored", cpu_restored, gpu_restored, restored_peak, 1e-3}};
    for (const auto& p : products) {
      const double difference = relative_difference(p.a, p.b, p.scale);
      std::printf("[ measured ] w-stacking %d, %s, %s: max |GPU - CPU| = %.2e of the scale (tolerance %.0e)\n",
                  wstacking ? 1 : 0, mode, p.name, difference, p.tolerance);
      EXPECT_LT(difference, p.tolerance) << p.name;
    }
    // The device's residual statistics are the host's on the same residual, to the bit.
    deconv::ChannelImages host = gpu;
    deconv::set_residual_statistics(host);
    EXPECT_EQ(gpu.residual_sigma, host.residual_sigma);
    EXPECT_EQ(gpu.residual_peak, host.residual_peak);
    EXPECT_GT(gpu.residual_sigma, 0.0);
    // The PSFs agree to 1e-5 of their peak, so their fitted beams nearly exactly.
    EXPECT_NEAR(gpu.fitted_beam->major_rad, cpu.fitted_beam->major_rad, 1e-4 * cpu.fitted_beam->major_rad);
    EXPECT_NEAR(gpu.fitted_beam->minor_rad, cpu.fitted_beam->minor_rad, 1e-4 * cpu.fitted_beam->minor_rad);
    std::printf("[ measured ] w-stacking %d, %s: %d vs %d iterations, %d vs %d major cycles (GPU vs CPU)\n",
                wstacking ? 1 : 0, mode, gpu.iterations, cpu.iterations, gpu.major_cycles, cpu.major_cycles);
  }
  const cuda::TransferStats transfers = gpu_imager.transfer_stats();
  EXPECT_EQ(transfers.channels, 1);  // one upload served every mode
  EXPECT_GT(transfers.upload_bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(WStacking, CudaImaging,
                         testing::Values(std::tuple{true, 0}, std::tuple{false, 0}, std::tuple{true, 2}));

}  // namespace
}  // namespace spip
