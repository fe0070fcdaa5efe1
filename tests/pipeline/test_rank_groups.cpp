// Channels shared by groups of ranks (parallel.ranks_per_channel): each member grids its
// share of every channel's rows, the group sums the images each major cycle, and the
// products must equal those of one rank per channel.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scratch.hpp"
#include "spip/fits/fits_image.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The demo's configuration (Briggs weighting, Hogbom CLEAN, RM synthesis and RM-CLEAN)
// on the sample's first eight channels, one thread per rank.
fs::path run(int ranks, const std::string& extra, const std::string& name, int channels = 8) {
  const fs::path out = spip::test::scratch_path(name);
  const std::string command = "TMPDIR=" + spip::test::scratch_dir().string() + " " + SPIP_MPIEXEC + " " +
                              std::to_string(ranks) + " " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + SPIP_TEST_DATA + "/oskar_small.ms --output.dir " + out.string() +
                              " --image.size 256 --image.scale 40 --faraday.dphi 1 --parallel.threads 1" +
                              " --input.channel_end " + std::to_string(channels) + " " + extra + " > " +
                              out.string() + ".log 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(out.string() + ".log");
  return out;
}

double peak_of(const std::vector<float>& values) {
  double peak = 0;
  for (float v : values)
    if (std::isfinite(v)) peak = std::max(peak, static_cast<double>(std::abs(v)));
  return peak;
}

double median_of(std::vector<float> values) {
  std::erase_if(values, [](float v) { return !std::isfinite(v); });
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Every product of `grouped` against `reference`, to 1e-5 of a peak: the channel images
// (dirty, PSF, model, residual, restored) of the restored Stokes I peak, as residuals
// are judged; the Faraday depth cubes, the moments' means and spreads and the peak
// polarised intensity of their own peak, everywhere. The rest are non-linear in the
// data, so a change in the last bits of a faint pixel's spectrum moves them freely:
// they are compared where a source is, of their own peak: the maps from the Faraday
// depth of peak (depth, angle, their errors, fractional polarisation, m2, RM-CLEAN
// iterations) where the polarised intensity is 20 times its median, and skewness and
// kurtosis (ratios of moments, as large for noise as for a source) where the Stokes
// parameter's spread over the channels is 3 % of Stokes I's largest or more: nowhere
// in V, which holds only noise in the sample. Returns the products compared.
int expect_equal_products(const fs::path& reference, const fs::path& grouped, const std::string& what) {
  const bool faraday = fs::exists(reference / "demo-peak-pi.fits");
  const std::vector<float> pi =
      faraday ? spip::fits::read_image((reference / "demo-peak-pi.fits").string()).data : std::vector<float>{};
  const double bright = faraday ? 20 * median_of(pi) : 0;
  const double restored_peak = peak_of(spip::fits::read_image((reference / "demo-image-I.fits").string()).data);
  int compared = 0;
  double worst_all = 0;
  for (const auto& entry : fs::directory_iterator(reference)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".fits" || name.find("catalogue") != std::string::npos) continue;
    const std::vector<float> a = spip::fits::read_image(entry.path().string()).data;
    const std::vector<float> b = spip::fits::read_image((grouped / name).string()).data;
    EXPECT_EQ(a.size(), b.size()) << name;
    if (a.size() != b.size()) continue;
    const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    const bool image = has("-dirty-") || has("-psf") || has("-model-") || has("-residual-") || has("-image-");
    const bool shape = has("-moment-skew-") || has("-moment-kurt-");
    const bool from_peak = (has("-peak-") && !has("-peak-pi")) || has("-fdf-m2") || has("-rmclean-iterations");
    std::vector<float> spread;
    double signal = 0;
    if (shape) {
      spread = spip::fits::read_image((reference / ("demo-moment-std-" + name.substr(name.size() - 6, 1) + ".fits"))
                                          .string())
                   .data;
      signal = 0.03 * peak_of(spip::fits::read_image((reference / "demo-moment-std-I.fits").string()).data);
    }
    const double scale = image ? restored_peak : peak_of(a);
    double worst = 0;
    std::size_t values = 0, one_sided_nan = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::isfinite(a[i]) != std::isfinite(b[i])) ++one_sided_nan;
      if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
      if ((from_peak && !(pi[i % pi.size()] > bright)) || (shape && !(spread[i] >= signal))) continue;
      worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
      ++values;
    }
    const double relative = scale > 0 ? worst / scale : worst;
    std::cout << "[ measured ] " << what << " " << name << ": max difference " << relative << " of the peak over "
              << values << " values\n";
    EXPECT_EQ(one_sided_nan, 0u) << what << " " << name;
    // One channel has no spread, and V no source.
    if (!shape || (faraday && !has("-V."))) {
      EXPECT_GT(values, 0u) << what << " " << name;
    }
    EXPECT_LE(relative, 1e-5) << what << " " << name;
    worst_all = std::max(worst_all, relative);
    ++compared;
  }
  std::cout << "[ measured ] " << what << ": largest difference of " << compared << " products " << worst_all
            << " of their peaks\n";
  return compared;
}

}  // namespace

TEST(RankGroups, GroupsOfTwoAndFourMakeTheProductsOfOneRankPerChannel) {
  const fs::path reference = run(1, "", "one_rank");
  const fs::path pairs = run(4, "--parallel.ranks_per_channel 2", "groups_of_2");
  const fs::path four = run(4, "--parallel.ranks_per_channel 4", "group_of_4");
  for (const fs::path& out : {pairs, four}) {
    const std::string log = read_file(out.string() + ".log");
    EXPECT_NE(log.find("channels shared by groups of ranks: parallel.ranks_per_channel"), std::string::npos) << log;
    EXPECT_NE(log.find("member 1 of a group of"), std::string::npos) << log;
  }
  // The first rank of each group writes its channels; qa.json says who.
  const auto qa = nlohmann::json::parse(read_file(pairs / "demo-qa.json"));
  std::set<int> writers;
  for (const auto& channel : qa.at("channels")) writers.insert(channel.at("rank").get<int>());
  EXPECT_EQ(writers, (std::set<int>{0, 2}));
  EXPECT_GE(expect_equal_products(reference, pairs, "groups of 2"), 50);
  EXPECT_GE(expect_equal_products(reference, four, "a group of 4"), 50);
}

// More ranks than channels: planning makes one group of the two ranks, so that neither
// idles, and the products are those of one rank.
TEST(RankGroups, OneChannelOnTwoRanksIsImagedByBoth) {
  const fs::path reference = run(1, "--input.channel_begin 3", "one_rank", 4);
  const fs::path shared = run(2, "--input.channel_begin 3", "two_ranks", 4);
  const std::string log = read_file(shared.string() + ".log");
  EXPECT_NE(log.find("2 ranks for 1 channel(s): groups of 2 keep every rank busy"), std::string::npos) << log;
  EXPECT_EQ(log.find("idles"), std::string::npos) << log;
  EXPECT_GE(expect_equal_products(reference, shared, "one channel on a group of 2"), 20);
}
