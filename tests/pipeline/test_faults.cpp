// Faults that real users meet and that once gave wrong products with exit code 0: NaN
// and Inf in a Measurement Set, and a second run started in the folder of a first.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "ms_edit.hpp"
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

// The demo's configuration (faraday.fractional on) on `ms`, small enough to be quick;
// fixed channel blocks, so that runs whose flags differ split the channels alike.
std::string command_for(const std::string& ms, const std::string& out, int channels_per_rank = 20) {
  return "TMPDIR=" + spip::test::scratch_dir().string() + " " + SPIP_MPIEXEC + " 2 " + SPIP_BIN + " --config " +
         SPIP_DEMO_CONFIG + " --input.ms " + ms + " --output.dir " + out +
         " --image.size 128 --image.scale 40 --faraday.dphi 1 --parallel.threads 1 --parallel.channels_per_rank " +
         std::to_string(channels_per_rank);
}

int run(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " > " + log.string() + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string copy_of_sample(const std::string& name) {
  const fs::path ms = spip::test::scratch_path(name);
  fs::copy(std::string(SPIP_TEST_DATA) + "/oskar_small.ms", ms, fs::copy_options::recursive);
  return ms.string();
}

// Every FITS product of `reference` has the same pixels in `other` (NaN where it has
// NaN), and the catalogues are the same; returns the products compared.
int expect_same_products(const fs::path& reference, const fs::path& other) {
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(reference)) {
    if (entry.path().extension() != ".fits") continue;
    const auto a = spip::fits::read_image(entry.path().string());
    const auto b = spip::fits::read_image((other / entry.path().filename()).string());
    if (a.shape.size() < 2) continue;  // the catalogue's table: compared as CSV below
    EXPECT_EQ(a.data.size(), b.data.size()) << entry.path().filename();
    if (a.data.size() != b.data.size()) continue;
    std::size_t finite_a = 0, finite_b = 0, differ = 0;
    for (std::size_t k = 0; k < a.data.size(); ++k) {
      finite_a += std::isfinite(a.data[k]);
      finite_b += std::isfinite(b.data[k]);
      differ += !(a.data[k] == b.data[k] || (std::isnan(a.data[k]) && std::isnan(b.data[k])));
    }
    EXPECT_EQ(finite_b, finite_a) << entry.path().filename() << ": finite pixels";
    EXPECT_EQ(differ, 0u) << entry.path().filename() << ": pixels that differ";
    ++compared;
  }
  EXPECT_EQ(read_file(other / "demo-catalogue.csv"), read_file(reference / "demo-catalogue.csv"));
  return compared;
}

// A number of each channel record of a qa.json, by channel.
std::map<int, double> per_channel(const fs::path& qa, const std::string& key) {
  const std::string text = read_file(qa);
  std::map<int, double> values;
  const std::regex record(R"(\{"channel": (\d+),[^}]*")" + key + R"(": ([0-9.e+-]+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), record); it != std::sregex_iterator(); ++it)
    values[std::stoi((*it)[1])] = std::stod((*it)[2]);
  return values;
}

std::map<int, double> nonfinite_per_channel(const fs::path& qa) { return per_channel(qa, "nonfinite_samples"); }

}  // namespace

// NaN and Inf where correlators and flaggers leave them: in unflagged and in flagged
// samples, in a visibility and in a weight. The run must equal one with exactly those
// samples flagged, and count them.
TEST(Faults, NonFiniteVisibilitiesCountAsFlagged) {
  const std::string nonfinite = copy_of_sample("nonfinite.ms"), flagged = copy_of_sample("flagged.ms");
  const std::vector<std::size_t> rows = spip::test::cross_correlation_rows(nonfinite, 4);
  ASSERT_EQ(rows.size(), 4u);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Already flagged in both: NaN there is what real MSs hold.
  for (const std::string& ms : {nonfinite, flagged}) spip::test::set_flag(ms, {rows[2], 9, 0});
  spip::test::set_data(nonfinite, {rows[0], 5, 3}, {inf, 0.0f});  // channel 5, YY, unflagged
  spip::test::set_data(nonfinite, {rows[1], 7, 1}, {nan, 1.0f});  // channel 7, XY, unflagged
  spip::test::set_data(nonfinite, {rows[2], 9, 0}, {nan, nan});   // channel 9, XX, flagged
  spip::test::set_weight(nonfinite, rows[3], 2, nan);             // YX of every channel of one row
  spip::test::set_flag(flagged, {rows[0], 5, 3});
  spip::test::set_flag(flagged, {rows[1], 7, 1});
  spip::test::set_flag_all_channels(flagged, rows[3], 2);

  const fs::path out_flagged = spip::test::scratch_path("flagged"), out_nonfinite = spip::test::scratch_path("nonfinite");
  ASSERT_EQ(run(command_for(flagged, out_flagged.string()), spip::test::scratch_path("flagged.log")), 0)
      << read_file(spip::test::scratch_path("flagged.log"));
  const fs::path log = spip::test::scratch_path("nonfinite.log");
  ASSERT_EQ(run(command_for(nonfinite, out_nonfinite.string()), log), 0) << read_file(log);

  const int compared = expect_same_products(out_flagged, out_nonfinite);
  EXPECT_GE(compared, 50);
  // Once, one Inf made every pixel of the peak maps NaN and the catalogue empty.
  const auto peak_pi = spip::fits::read_image((out_nonfinite / "demo-peak-pi.fits").string());
  EXPECT_GT(std::count_if(peak_pi.data.begin(), peak_pi.data.end(), [](float v) { return std::isfinite(v); }), 0);
  const std::string catalogue = read_file(out_nonfinite / "demo-catalogue.csv");
  EXPECT_EQ(std::count(catalogue.begin(), catalogue.end(), '\n'), 4) << "the header and the sample's three polarised sources\n"
                                                                   << catalogue;

  const std::map<int, double> counts = nonfinite_per_channel(out_nonfinite / "demo-qa.json");
  ASSERT_EQ(counts.size(), 40u);
  for (const auto& [channel, count] : counts)
    EXPECT_EQ(count, channel == 5 || channel == 7 || channel == 9 ? 2.0 : 1.0) << "channel " << channel;
  for (const auto& [channel, count] : nonfinite_per_channel(out_flagged / "demo-qa.json"))
    EXPECT_EQ(count, 0.0) << "channel " << channel;
  // One warning per rank with its total: 20 channels of the NaN weight, plus three more
  // samples on rank 0 (channels 5, 7, 9 are rank 0's).
  const std::string text = read_file(log);
  EXPECT_NE(text.find("[spip 0/2 "), std::string::npos);
  EXPECT_NE(text.find("warning: 23 correlation sample(s) in 20 channel(s) are NaN or Inf"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: 20 correlation sample(s) in 20 channel(s) are NaN or Inf"), std::string::npos) << text;
  std::cout << "[ measured ] " << compared << " FITS products and the catalogue equal those of a run with the "
            << "non-finite samples flagged\n";
}

// A second run with the same folder and prefix, started while the first runs, stops at
// once naming the first; the first completes with its own products only.
TEST(Faults, SecondRunInTheSameFolderIsRefused) {
  const std::string sample = std::string(SPIP_TEST_DATA) + "/oskar_small.ms";
  const fs::path reference = spip::test::scratch_path("reference"), shared = spip::test::scratch_path("shared");
  ASSERT_EQ(run(command_for(sample, reference.string()), spip::test::scratch_path("reference.log")), 0);

  const fs::path first_log = spip::test::scratch_path("first.log");
  const pid_t first = fork();
  if (first == 0) {
    const std::string line = command_for(sample, shared.string()) + " > " + first_log.string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(first, 0);
  const fs::path claim = shared / ".demo.claim";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(claim) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(claim)) << read_file(first_log);

  const fs::path second_log = spip::test::scratch_path("second.log");
  const int second = run(command_for(sample, shared.string()) + " --clean.niter 50", second_log);
  int status = 0;
  waitpid(first, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(first_log);

  const std::string refused = read_file(second_log);
  EXPECT_EQ(second, 3) << refused;
  EXPECT_NE(refused.find("spip: error: " + shared.string() + " is in use by another run with prefix demo: process "),
            std::string::npos)
      << refused;
  int errors = 0;
  for (std::size_t at = refused.find("spip: error:"); at != std::string::npos; at = refused.find("spip: error:", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1) << refused;
  EXPECT_EQ(refused.find("effective configuration"), std::string::npos) << "the refused run writes nothing: " << refused;
  EXPECT_FALSE(fs::exists(claim)) << "the first run releases its claim";
  EXPECT_NE(read_file(shared / "demo-config.ini").find("niter = 5000"), std::string::npos);
  const int compared = expect_same_products(reference, shared);
  EXPECT_GE(compared, 50);
  std::cout << "[ measured ] the second run: " << refused << "[ measured ] the first run's " << compared
            << " FITS products equal those of a run alone\n";
}

// Rows flagged whole by FLAG_ROW (their FLAG left unset, as some correlators and
// flaggers write them) are flagged samples of every channel: once they were left out of
// the count, and qa.json said 0 of a quarter of the data flagged. Each member of a rank
// group reads every such row; the group counts them once.
TEST(Faults, RowsFlaggedWholeCountInTheFlaggedFraction) {
  const std::string ms = copy_of_sample("flag_row.ms");
  const std::size_t flagged = spip::test::set_flag_row_every(ms, 4);
  const double expected = static_cast<double>(flagged) / 9936.0;  // the sample's rows, none flagged before
  for (const int ranks_per_channel : {1, 2}) {
    const std::string group = std::to_string(ranks_per_channel);
    const fs::path out = spip::test::scratch_path("group" + group), log = spip::test::scratch_path("group" + group + ".log");
    ASSERT_EQ(run(command_for(ms, out.string(), 20 * ranks_per_channel) +
                      " --clean.niter 0 --faraday.cubes none --parallel.ranks_per_channel " + group,
                  log),
              0)
        << read_file(log);
    const std::map<int, double> fractions = per_channel(out / "demo-qa.json", "flagged_fraction");
    ASSERT_EQ(fractions.size(), 40u) << ranks_per_channel;
    for (const auto& [channel, fraction] : fractions)
      EXPECT_NEAR(fraction, expected, 1e-9) << "channel " << channel << ", parallel.ranks_per_channel "
                                             << ranks_per_channel;
    std::cout << "[ measured ] parallel.ranks_per_channel " << ranks_per_channel << ": flagged_fraction "
              << fractions.begin()->second << " with " << flagged << " of 9936 rows flagged by FLAG_ROW\n";
  }
}
