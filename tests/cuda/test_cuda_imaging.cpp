// cuda::ChannelImager against the CPU backend on a channel of the OSKAR sample MS:
// dirty images, PSF, and the cleaned model, residual and restored images.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gpu_test_main.hpp"
#include "spip/cuda/channel_imager.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/ms/ms_reader.hpp"

namespace spip {
namespace {

constexpr double speed_of_light = 299792458.0;

cuda::ChannelInput read_channel(int channel) {
  const ms::MsReader reader(std::string(SPIP_TEST_DATA) + "/oskar_small.ms", ms::Selection{});
  const ms::VisBlock block = reader.read(channel, channel + 1);
  cuda::ChannelInput input;
  const double inv_lambda = block.freq_hz[0] / speed_of_light;
  for (std::size_t r = 0; r < block.num_rows(); ++r) {
    for (int k = 0; k < 3; ++k) input.uvw_lambda.push_back(block.uvw_m[3 * r + k] * inv_lambda);
    for (int s = 0; s < 4; ++s) {
      input.vis.push_back(block.vis[block.index(r, 0, s)]);
      input.weights.push_back(block.weight[block.index(r, 0, s)]);
    }
  }
  return input;
}

// max |gpu - cpu| over max |cpu|.
double relative_difference(const std::vector<float>& cpu, const std::vector<float>& gpu) {
  EXPECT_EQ(cpu.size(), gpu.size());
  double worst = 0, peak = 0;
  for (std::size_t i = 0; i < cpu.size() && i < gpu.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(cpu[i] - gpu[i])));
    peak = std::max(peak, static_cast<double>(std::abs(cpu[i])));
  }
  return peak > 0 ? worst / peak : worst;
}

class CudaImaging : public testing::TestWithParam<bool> {};  // w-stacking on or off

TEST_P(CudaImaging, MatchesTheCpuBackendTo1e5) {
  const imaging::ImageGeometry geometry = imaging::ImageGeometry::make(256, 40.0 / 206264.806, 1.2);
  const double accuracy = 1e-5;
  cuda::ChannelInput input = read_channel(3);
  imaging::WeightingScheme briggs;
  briggs.mode = Weighting::briggs;
  imaging::apply_weighting(geometry, briggs, input.uvw_lambda.data(), input.uvw_lambda.size() / 3, 4,
                           input.weights.data());
  CleanConfig clean;
  clean.niter = 300;
  clean.threshold_jy = 0.01;
  clean.subminor = false;  // the GPU runs plain Hogbom

  imaging::ChannelImager cpu_imager(geometry, accuracy, GetParam());
  cpu_imager.set_data(input.uvw_lambda, input.weights);
  const deconv::ChannelImages cpu = deconv::image_channel(cpu_imager, input.vis, clean, std::nullopt);

  cuda::ChannelImager gpu_imager(test::gpu_device, geometry, accuracy, GetParam(), input.uvw_lambda.size() / 3);
  gpu_imager.stage(input);
  gpu_imager.next();
  const deconv::ChannelImages gpu = gpu_imager.image_channel(clean, std::nullopt);

  EXPECT_EQ(gpu.iterations, cpu.iterations);
  EXPECT_EQ(gpu.major_cycles, cpu.major_cycles);
  const struct {
    const char* name;
    const std::vector<float>&a, &b;
  } products[] = {{"dirty", cpu.dirty, gpu.dirty},          {"psf", cpu.psf, gpu.psf},
                  {"model", cpu.model, gpu.model},          {"residual", cpu.residual, gpu.residual},
                  {"restored", cpu.restored, gpu.restored}};
  for (const auto& p : products) {
    const double difference = relative_difference(p.a, p.b);
    std::printf("[ measured ] w-stacking %d, %s: max |GPU - CPU| / max |CPU| = %.2e\n", GetParam() ? 1 : 0, p.name,
                difference);
    EXPECT_LT(difference, 1e-5) << p.name;
  }
  const cuda::TransferStats transfers = gpu_imager.transfer_stats();
  EXPECT_EQ(transfers.channels, 1);
  EXPECT_GT(transfers.upload_bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(WStacking, CudaImaging, testing::Bool());

}  // namespace
}  // namespace spip
