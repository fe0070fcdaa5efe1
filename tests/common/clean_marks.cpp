#include "clean_marks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <vector>

#include "product_compare.hpp"
#include "spip/fits/fits_image.hpp"

namespace fs = std::filesystem;

namespace spip::test {

namespace {

std::string clean_kind(bool multiscale) { return multiscale ? " --clean.multiscale true" : ""; }

// The ATCA snapshot on 256 pixels of 1.5", CLEAN to 3 sigma in at most 2000 iterations.
std::string atca_snapshot_case(const std::string& band) {
  return std::string(" --input.ms ") + SPIP_TEST_DATA + "/real/atca_1934_snapshot.ms --image.size 256 --image.scale 1.5" +
         band + " --clean.auto_threshold 3 --clean.niter 2000";
}

}  // namespace

std::string merged_band_case() {
  return atca_snapshot_case(" --input.freq_min 2.612e9 --input.freq_max 2.644e9 --image.channel_width 32015624");
}

std::string degenerate_channel_case(bool multiscale) {
  return atca_snapshot_case(" --input.freq_min 2.6275e9 --input.freq_max 2.6285e9") + clean_kind(multiscale);
}

std::string wide_lobe_case(bool multiscale) {
  return std::string(" --input.ms ") + SPIP_TEST_DATA +
         "/real/ovrolwa_zenith_28mhz.ms --image.size 128 --image.scale 60 --input.channel_end 1 --clean.niter 300" +
         clean_kind(multiscale);
}

nlohmann::json channel_qa(const fs::path& out, int k) {
  std::ifstream in(out / "spip-qa.json");
  return nlohmann::json::parse(in).at("channels").at(k);
}

std::vector<float> product_plane(const fs::path& out, const std::string& product, const char* stokes) {
  return fits::read_image((out / ("spip-" + product + "-" + stokes + ".fits")).string()).data;
}

double expect_degenerate_channel_marked(const fs::path& out, bool multiscale) {
  const nlohmann::json qa = channel_qa(out);
  EXPECT_GE(qa.at("psf_sidelobe").get<double>(), 0.999) << "one line of baselines: a degenerate PSF";
  EXPECT_EQ(qa.at("clean_stop"), multiscale ? "degenerate_psf" : "threshold");
  double dirty_peak = 0, product_peak = 0;
  std::size_t not_finite = 0;  // a product that ran away to Inf or NaN, which peak_of() passes over
  for (const char* stokes : {"I", "Q", "U", "V"}) {
    dirty_peak = std::max(dirty_peak, peak_of(product_plane(out, "dirty", stokes)));
    for (const char* product : {"model", "residual", "image"}) {
      const std::vector<float> values = product_plane(out, product, stokes);
      not_finite += std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
      product_peak = std::max(product_peak, peak_of(values));
    }
  }
  EXPECT_EQ(not_finite, 0u);
  EXPECT_LE(product_peak, 100 * dirty_peak);
  if (multiscale) {
    EXPECT_EQ(peak_of(product_plane(out, "model", "I")), 0.0) << "no component on a degenerate PSF";
  }
  return product_peak / dirty_peak;
}

void expect_wide_lobe_outcome(const fs::path& out, const std::string& log, bool multiscale) {
  EXPECT_EQ(channel_qa(out).at("clean_stop"), multiscale ? "diverged" : "niter") << log;
  const bool says_why = log.find("the PSF reaches 1.00 of its peak a quarter of the image or more from it") !=
                            std::string::npos &&
                        log.find("point CLEAN (clean.multiscale false)") != std::string::npos;
  EXPECT_EQ(says_why, multiscale) << log;
  EXPECT_NE(log.find(multiscale ? "CLEAN summary: 1 of 1 channels DIVERGED" : "CLEAN summary: 0 of 1 channels DIVERGED"),
            std::string::npos)
      << log;
}

}  // namespace spip::test
