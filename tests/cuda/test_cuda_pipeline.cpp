// The whole job on the GPU backend against the CPU backend, product by product: the
// dirty and PSF cubes within 1e-5 of each file's peak, what Hogbom CLEAN made and what
// is made from it within 1e-3, and the same Faraday-depth peaks (RM-CLEAN's products by
// the share of values that agree, see below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "spip/cuda/device.hpp"
#include "spip/config/config.hpp"
#include "spip/fits/fits_image.hpp"
#include "sample_pointing.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

std::string run(const std::string& device, const fs::path& out, const std::string& more = "") {
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + SPIP_TEST_DATA + "/oskar_small.ms --output.dir " + out.string() +
                              " --image.size 256 --image.scale 40 --faraday.dphi 1 --clean.subminor false --parallel.device " + device +
                              " " + more + " > " + out.string() + ".log 2>&1";
  return std::system(command.c_str()) == 0 ? "" : "spip failed, see " + out.string() + ".log";
}

double median(std::vector<float> values) {
  std::erase_if(values, [](float v) { return !std::isfinite(v); });
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

TEST(CudaPipeline, EveryProductMatchesTheCpuBackend) {
  const fs::path base = spip::test::scratch_dir();
  ASSERT_EQ(run("cpu", base / "cpu"), "");
  ASSERT_EQ(run("gpu", base / "gpu"), "");

  // The GPU's dirty images differ from the CPU's in their last bits (atomics in no fixed
  // order, FMA), so Hogbom, and RM-CLEAN after it, may take the other of two residual
  // pixels that nearly tie. Hogbom's products and what comes of them are compared to
  // 1e-3 of the restored Stokes I peak; RM-CLEAN's by the share of values that agree,
  // and the peak maps where a source is. More follows from those near ties:
  // - the Faraday products are blanked where the pixel's Stokes I fit is, so a faint
  //   pixel at the fit's threshold may be blanked on one backend only (never a bright one);
  // - skewness and kurtosis are ratios of moments, as large for noise as for signal: they
  //   are compared where a pixel's restored values differ by at most 1 % of their spread
  //   over the channels (and the spread is at least 3 % of the map's largest);
  // - the error maps scale with each pixel's noise, measured on its residuals, and RM-CLEAN
  //   stops at a cutoff scaled by it: the error maps agree on 95 % of the pixels, and the
  //   iteration counts within one;
  // - which pixels tie is a matter of rounding: with the subgrid gridder (whose global
  //   atomic adds come in no fixed order) 98.9 % of the peak-chi0 values and 97.3 % of
  //   the peak-pi-err values agreed (H200, 2026-11-27), so the peak maps must agree on
  //   98 % of the pixels.
  const std::vector<float> pi = spip::fits::read_image((base / "cpu" / "demo-peak-pi.fits").string()).data;
  const double bright = 5 * median(pi);
  std::map<std::string, double> restored_difference;  // by Stokes parameter
  double restored_peak = 0;
  for (const char* stokes : {"I", "Q", "U", "V"}) {
    const std::string name = std::string("demo-image-") + stokes + ".fits";
    const std::vector<float> cpu = spip::fits::read_image((base / "cpu" / name).string()).data;
    const std::vector<float> gpu = spip::fits::read_image((base / "gpu" / name).string()).data;
    ASSERT_EQ(cpu.size(), gpu.size()) << name;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      restored_difference[stokes] = std::max(restored_difference[stokes], std::abs(static_cast<double>(cpu[i]) - gpu[i]));
      if (stokes == std::string("I")) restored_peak = std::max(restored_peak, std::abs(static_cast<double>(cpu[i])));
    }
  }
  int files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(base / "cpu")) {
    if (entry.path().extension() != ".fits") continue;
    const std::string name = entry.path().filename().string();
    const std::vector<float> cpu = spip::fits::read_image(entry.path().string()).data;
    const std::vector<float> gpu = spip::fits::read_image((base / "gpu" / name).string()).data;
    ASSERT_EQ(cpu.size(), gpu.size()) << name;
    const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    const bool peak_map = has("-peak-");
    // sigma_add is blank where PI is below 5 sigma of the pixel's own FDF noise, and
    // alpha where Stokes I is below the threshold its residual noise sets: both rest on
    // the peak fit, compared where PI is bright, as the peak maps are.
    const bool sampled = has("-sigma-add");
    const bool bright_only = peak_map || sampled || has("-stokes-i-alpha.");
    const bool pixel_map = bright_only || has("-fdf-m2.") || has("-fdf-noise-mad.") || has("-rmclean-iterations.");
    const bool faraday = pixel_map || has("-FDF_");
    const bool after_rm_clean = pixel_map || has("-FDF_clean_");
    const bool clean_product = has("-model-") || has("-residual-") || has("-image-");
    const bool shape_moment = has("-moment-skew-") || has("-moment-kurt-");
    std::vector<float> spread;  // a shape moment's: the same Stokes parameter's standard deviation
    double signal = 0;
    if (shape_moment) {
      const std::string stokes = name.substr(name.size() - 6, 1);  // demo-moment-kurt-V.fits
      spread = spip::fits::read_image((base / "cpu" / ("demo-moment-std-" + stokes + ".fits")).string()).data;
      signal = std::max(0.03 * *std::max_element(spread.begin(), spread.end()), 100 * restored_difference[stokes]);
    }
    double scale = 0;
    for (float v : cpu)
      if (std::isfinite(v)) scale = std::max(scale, static_cast<double>(std::abs(v)));
    if (clean_product) scale = restored_peak;
    const bool phi = name.ends_with("-peak-phi.fits");
    const bool before_clean = name.starts_with("demo-dirty-") || name == "demo-psf.fits";
    // sigma_add is a percentile of a posterior sampled on a grid spanning the residuals'
    // range: two CPU runs differ by 1e-2 of its peak (tests/common/product_compare.cpp).
    const double tolerance = phi ? 1e-3 : (before_clean ? 1e-5 : sampled ? 1e-2 : 1e-3) * scale;  // rad/m^2 for peak phi
    double worst = 0;
    std::size_t compared = 0, agree = 0, blanked_on_one = 0;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      const bool is_bright = pi[i % pi.size()] > bright;
      if (std::isfinite(cpu[i]) != std::isfinite(gpu[i])) {
        ASSERT_TRUE(faraday && !is_bright) << name << " pixel " << i << " is blanked on one backend only";
        ++blanked_on_one;
        continue;
      }
      if (!std::isfinite(cpu[i]) || (bright_only && !is_bright) || (shape_moment && !(spread[i] >= signal))) continue;
      const double d = std::abs(static_cast<double>(cpu[i]) - gpu[i]);
      worst = std::max(worst, d);
      ++compared;
      agree += d <= tolerance;
    }
    const double share = compared ? static_cast<double>(agree) / compared : 1.0;
    std::printf("[ measured ] %s: max |GPU - CPU| = %.3g (%.2e of the scale), %.4f within %.3g over %zu values; "
                "%zu blanked on one backend only\n",
                name.c_str(), worst, scale > 0 ? worst / scale : worst, share, tolerance, compared, blanked_on_one);
    EXPECT_LE(blanked_on_one, cpu.size() / 1000) << name;
    if (bright_only || shape_moment) {
      EXPECT_GT(compared, 0u) << name;
    }
    if (!after_rm_clean) {
      EXPECT_LE(worst, tolerance) << name;
    } else if (has("-rmclean-iterations.")) {
      EXPECT_GE(share, 0.99) << name;
      EXPECT_LE(worst, 1) << name;
    } else {
      EXPECT_GE(share, has("-err.") ? 0.95 : 0.98) << name;
      EXPECT_LT(worst, phi ? 0.05 : (sampled ? 1e-1 : 1e-2) * scale) << name;  // 0.05 rad/m^2: 4 % of the RMSF's FWHM
    }
    ++files;
  }
  EXPECT_GT(files, 40);

  // Both ranks of this node image on the GPU; with one visible they share it.
  if (spip::cuda::probe_devices().devices.size() == 1) {
    std::ifstream log(base / "gpu.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("shared by 2 rank(s) of this node"), std::string::npos) << text;
  }
}

// The ATCA snapshot whose PSF is a ridge as high as its peak (tests/pipeline's
// test_clean_divergence.cpp): the GPU's minor cycles subtract the same PSF of twice the
// image's side as the CPU's and take the same components, to the same threshold.
TEST(CudaPipeline, ADegeneratePsfIsCleanedAsOnTheCpu) {
  const fs::path base = spip::test::scratch_dir();
  std::map<std::string, std::vector<float>> model;
  for (const char* device : {"cpu", "gpu"}) {
    const fs::path out = base / device;
    const std::string command =
        std::string(SPIP_BIN) + " --input.ms " + SPIP_TEST_DATA + "/real/atca_1934_snapshot.ms --output.dir " +
        out.string() + " --image.size 256 --image.scale 1.5 --input.freq_min 2.612e9 --input.freq_max 2.644e9" +
        " --image.channel_width 32015624 --clean.niter 2000 --clean.auto_threshold 3 --faraday.cubes none" +
        " --parallel.device " + device + " > " + out.string() + ".log 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "see " << out << ".log";
    std::ifstream log(out.string() + ".log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("CLEAN ran with the PSF of twice the image's side"), std::string::npos) << device;
    EXPECT_NE(text.find("CLEAN summary: 0 of 1 channels DIVERGED"), std::string::npos) << device;
    model[device] = spip::fits::read_image((out / "spip-model-I.fits").string()).data;
  }
  double cpu_flux = 0, gpu_flux = 0;
  for (std::size_t i = 0; i < model["cpu"].size(); ++i) {
    cpu_flux += model["cpu"][i];
    gpu_flux += model["gpu"][i];
  }
  std::printf("[ measured ] ATCA 32 channels: model I %.4f Jy on the CPU, %.4f Jy on the GPU\n", cpu_flux, gpu_flux);
  EXPECT_GT(cpu_flux, 5.0);
  EXPECT_NEAR(gpu_flux, cpu_flux, 1e-3 * cpu_flux);
}

// Primary-beam correction (beam.model airy, with `more` keys) on both backends: the
// corrected cubes differ by the restored ones' differences over the response, so their
// differences times the response stay within 1e-3 of the restored Stokes I peak; and the
// corrected Faraday peak maps agree where a source is, as in
// EveryProductMatchesTheCpuBackend. With one pointing the response is made on the host
// for either backend, so the pb cubes are the same bits. A mosaic's weighs each
// pointing by its residual noise on each backend, which for these noiseless pointings
// is CLEAN's own error and differs between backends far more than in the last bits: to
// 2e-2 of the response, and a corrected pixel may be blank on one backend only where the
// response is that close to beam.limit (two CPU runs already differ there:
// tests/common/product_compare.cpp), one in a thousand at most.
namespace {

void expect_beam_corrected_products_match(const std::string& more, bool mosaic) {
  const fs::path base = spip::test::scratch_dir();
  const std::string beam = "--beam.model airy --beam.dish_diameter 94 --output.channel_cubes image,image-pb,pb "
                           "--faraday.cubes none " + more;
  ASSERT_EQ(run("cpu", base / "cpu", beam), "");
  ASSERT_EQ(run("gpu", base / "gpu", beam), "");
  const auto read = [&](const char* device, const std::string& name) {
    return spip::fits::read_image((base / device / name).string()).data;
  };
  const std::vector<float> pb = read("cpu", "demo-pb.fits");
  if (mosaic) {
    const std::vector<float> gpu = read("gpu", "demo-pb.fits");
    ASSERT_EQ(gpu.size(), pb.size());
    for (std::size_t i = 0; i < pb.size(); ++i) ASSERT_NEAR(gpu[i], pb[i], 2e-2) << i;
  } else {
    ASSERT_EQ(read("gpu", "demo-pb.fits"), pb);
  }
  double restored_peak = 0;
  for (float v : read("cpu", "demo-image-I.fits")) restored_peak = std::max(restored_peak, std::abs(static_cast<double>(v)));
  for (const char* stokes : {"I", "Q", "U", "V"}) {
    const std::string name = std::string("demo-image-pb-") + stokes + ".fits";
    const std::vector<float> cpu = read("cpu", name), gpu = read("gpu", name);
    ASSERT_EQ(cpu.size(), pb.size()) << name;
    ASSERT_EQ(gpu.size(), pb.size()) << name;
    double worst = 0;
    std::size_t blanked_on_one = 0;
    const double beam_limit = spip::BeamConfig{}.limit;  // the runs leave beam.limit at its default
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      if (std::isfinite(cpu[i]) != std::isfinite(gpu[i])) {
        ASSERT_TRUE(mosaic && std::abs(pb[i] - beam_limit) < 2e-2) << name << " pixel " << i;
        ++blanked_on_one;
        continue;
      }
      if (std::isfinite(cpu[i]))
        worst = std::max(worst, std::abs(static_cast<double>(cpu[i]) - gpu[i]) * pb[i]);
    }
    EXPECT_LE(blanked_on_one, cpu.size() / 1000) << name;
    std::printf("[ measured ] %s: max |GPU - CPU| x response = %.3g (%.2e of the restored I peak)\n", name.c_str(),
                worst, worst / restored_peak);
    EXPECT_LE(worst, 1e-3 * restored_peak) << name;
  }
  const std::vector<float> pi = read("cpu", "demo-peak-pi.fits");
  const double bright = 5 * median(pi);
  for (const char* map : {"demo-peak-pi.fits", "demo-peak-phi.fits"}) {
    const std::vector<float> cpu = read("cpu", map), gpu = read("gpu", map);
    const bool phi = std::string(map) == "demo-peak-phi.fits";
    std::size_t compared = 0, agree = 0;
    for (std::size_t i = 0; i < cpu.size(); ++i)
      if (std::isfinite(cpu[i]) && std::isfinite(gpu[i]) && pi[i] > bright) {
        ++compared;
        agree += std::abs(static_cast<double>(cpu[i]) - gpu[i]) <= (phi ? 1e-3 : 1e-3 * pi[i]);
      }
    std::printf("[ measured ] %s, corrected: %zu of %zu bright pixels agree\n", map, agree, compared);
    EXPECT_GT(compared, 0u) << map;
    EXPECT_GE(static_cast<double>(agree), 0.98 * static_cast<double>(compared)) << map;
  }
}

}  // namespace

TEST(CudaPipeline, TheBeamCorrectedProductsMatchTheCpuBackend) { expect_beam_corrected_products_match("", false); }

// A mosaic of the sample and the sample's sky seen from 1 deg east of it.
TEST(CudaPipeline, AMosaicMatchesTheCpuBackend) {
  const fs::path east = spip::test::scratch_dir() / "east.ms";
  ASSERT_EQ(spip::test::simulate_sample_pointing(SPIP_SIMULATE_BIN, SPIP_TEST_DATA, "1", 40, "94", east.string()), 0);
  expect_beam_corrected_products_match("--input.ms " + east.string(), true);  // beside the sample
}
