#include <gtest/gtest.h>
#include <unistd.h>
#include <cmath>

#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"
#include "ms_dft.hpp"
#include "scratch.hpp"
#include <nlohmann/json.hpp>
#include <sys/mount.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const std::string data_dir = SPIP_TEST_DATA;
const std::string oskar_ms = data_dir + "/oskar_small.ms";

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path scratch(const std::string& name) { return spip::test::scratch_path(name); }

// Each command with a TMPDIR of its own: an MPI singleton's Open MPI daemon clears its
// session folder there after spip exits, and a next run that makes the same folder
// meanwhile fails in orte_init ("mkdir ... File exists", Open MPI issue 8510).
Outcome run(const std::string& command) {
  static int runs = 0;
  const fs::path out = scratch("stdout.txt"), err = scratch("stderr.txt");
  const fs::path tmpdir = scratch("tmp-" + std::to_string(++runs));
  fs::create_directories(tmpdir);
  const std::string full =
      "export TMPDIR=" + tmpdir.string() + "; " + command + " > " + out.string() + " 2> " + err.string();
  const int status = std::system(full.c_str());
  return Outcome{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
}

Outcome run_spip(const std::string& args) { return run(std::string(SPIP_BIN) + " " + args); }

// The sample into scratch(name), one thread per rank because the ranks share the
// machine's cores.
std::string sample_args(const std::string& name) {
  return "--input.ms " + oskar_ms + " --output.dir " + scratch(name).string() + " --parallel.threads 1";
}

// Small, coarse images keep the end-to-end runs short.
std::string base_args(const std::string& name) {
  return sample_args(name) + " --image.size 64 --image.scale 120 --clean.niter 50";
}

// A user error: the documented exit code and exactly one line naming what is wrong.
void expect_one_line_error(const Outcome& outcome, int code, std::initializer_list<std::string> fragments) {
  EXPECT_EQ(outcome.exit_code, code) << outcome.err;
  EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  for (const std::string& fragment : fragments)
    EXPECT_NE(outcome.err.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << outcome.err;
}

// Channel records of a qa.json without the fields that depend on the rank layout or timing.
std::vector<std::string> channel_records(const fs::path& qa) {
  const std::string text = read_file(qa);
  std::vector<std::string> records;
  const std::regex record(R"(\{"channel": [^}]*\})");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), record); it != std::sregex_iterator(); ++it) {
    std::string r = it->str();
    r = std::regex_replace(r, std::regex(R"("rank": \d+, )"), "");
    r = std::regex_replace(r, std::regex(R"(, "read_s": [-0-9.e]+)"), "");
    r = std::regex_replace(r, std::regex(R"(, "image_s": [-0-9.e]+)"), "");
    records.push_back(r);
  }
  return records;
}

}  // namespace

TEST(SpipCli, HelpListsKeysWithUnits) {
  const Outcome outcome = run_spip("--help");
  EXPECT_EQ(outcome.exit_code, 0);
  for (const char* key : {"input.ms", "image.scale", "clean.threshold", "faraday.phi_max", "parallel.device"})
    EXPECT_NE(outcome.out.find(key), std::string::npos) << key;
  EXPECT_NE(outcome.out.find("arcsec"), std::string::npos);
}

TEST(SpipCli, PrintConfigShowsCommandLineOverridingTheFile) {
  const Outcome outcome = run_spip("--config " + std::string(SPIP_TEST_DATA) + "/../configs/demo.cfg --image.size 256 --print-config");
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("size = 256"), std::string::npos) << outcome.out;
  EXPECT_NE(outcome.out.find("threshold = 0.005"), std::string::npos) << outcome.out;
}

TEST(SpipCli, ConfigErrorsExitWithCode2) {
  expect_one_line_error(run_spip(base_args("a") + " --image.sise 5"), 2, {"image.sise"});
  expect_one_line_error(run_spip(base_args("b") + " --image.robust 3"), 2, {"image.robust", "3", "[-2, 2]"});
  expect_one_line_error(run_spip("--input.ms " + oskar_ms + " --image.size -4"), 2, {"image.size", "-4"});
  expect_one_line_error(run_spip(base_args("uv") + " --image.uv_min 500 --image.uv_max 100"), 2,
                        {"image.uv_max", "image.uv_min", "no baseline"});
  // A value PREFIX-config.ini could not give back ('#' starts a comment there), and a
  // beam for every channel beside each channel's own.
  expect_one_line_error(run_spip("--input.ms " + oskar_ms + " --output.dir " + scratch("o#1").string()), 2,
                        {"output.dir", "'#'"});
  expect_one_line_error(run_spip(base_args("beams") + " --image.beam 300,200,10 --image.common_beam false"), 2,
                        {"image.beam", "image.common_beam"});
  // A shell's '~' and quotes in a configuration file: no folder named '~' or '"out"'.
  const fs::path shell_cfg = scratch("shell.cfg");
  std::ofstream(shell_cfg) << "[output]\ndir = ~/spip_out\n";
  expect_one_line_error(run_spip("--config " + shell_cfg.string() + " --input.ms " + oskar_ms), 2,
                        {"output.dir = ~/spip_out", "only by a shell", "in full"});
  std::ofstream(shell_cfg) << "[output]\ndir = \"quoted\"\n";
  expect_one_line_error(run_spip("--config " + shell_cfg.string() + " --input.ms " + oskar_ms), 2,
                        {"output.dir = \"quoted\"", "quotes"});
  EXPECT_FALSE(fs::exists("~") || fs::exists("\"quoted\""));
  const fs::path cfg = scratch("bad.cfg");
  std::ofstream(cfg) << "[image]\nsize = abc\n";
  expect_one_line_error(run_spip("--config " + cfg.string() + " --input.ms x.ms"), 2, {"image.size", "abc", cfg.string()});
}

TEST(SpipCli, InputErrorsExitWithCode3) {
  expect_one_line_error(run_spip("--input.ms " + scratch("none.ms").string()), 3, {"none.ms", "no such file"});
  expect_one_line_error(run_spip(base_args("d") + " --input.column CORRECTED_DATA"), 3, {"CORRECTED_DATA", "not found"});
  expect_one_line_error(run_spip(base_args("e") + " --input.channel_end 41"), 3, {"41", "40 channels"});
  // A cube that is there but is not FITS: the key, the file and CFITSIO's reason.
  const std::string not_fits = data_dir + "/oskar_small.truth.json";
  expect_one_line_error(run_spip("--input.cube_q " + not_fits + " --input.cube_u " + not_fits + " --output.dir " +
                                 scratch("f").string()),
                        3, {"input.cube_q", not_fits, "not SIMPLE"});
  // An MS whose main table's description was cut short (a copy that stopped): damaged,
  // in one line, with casacore's words.
  const fs::path cut = scratch("cut.ms");
  fs::copy(oskar_ms, cut, fs::copy_options::recursive);
  fs::resize_file(cut / "table.f0", fs::file_size(cut / "table.f0") / 2);
  expect_one_line_error(run_spip("--input.ms " + cut.string() + " --output.dir " + scratch("cut_out").string()), 3,
                        {cut.string(), "cannot be opened (a truncated or corrupt table file", "casacore:"});
}

TEST(SpipCli, AFailingRunUnderMpiexecPrintsItsErrorAlone) {
  // -q: Open MPI's own banner about a non-zero exit, which the README's commands leave out.
  const Outcome outcome = run(std::string(SPIP_MPIEXEC) + " 2 -q " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + scratch("missing.ms").string() + " --output.dir " +
                              scratch("missing_out").string());
  expect_one_line_error(outcome, 3, {"missing.ms", "no such file"});
  EXPECT_EQ(outcome.out, "") << "nothing but the error may be printed";
  EXPECT_FALSE(fs::exists(scratch("missing_out"))) << "nothing may be written";
}

// An input one rank alone cannot open (a path not mounted on its node): every rank
// stops, and rank 0 says why in one line. Given rank 1 alone a missing MS (mpiexec's
// MPMD form), rank 0 once went on to the next collective and waited there for ever.
TEST(SpipCli, AnInputOneRankCannotOpenStopsEveryRank) {
  const std::string args = " --image.size 64 --output.dir " + scratch("one_rank_out").string();
  const Outcome outcome = run("timeout 120 " + std::string(SPIP_MPIEXEC) + " 1 -q " + SPIP_BIN + " --input.ms " +
                              oskar_ms + args + " : -n 1 " + SPIP_BIN + " --input.ms " +
                              scratch("not_on_this_node.ms").string() + args);
  expect_one_line_error(outcome, 3, {"not_on_this_node.ms", "no such file"});
  EXPECT_FALSE(fs::exists(scratch("one_rank_out"))) << "nothing may be written";
}

// A budget every rank checks, failing on both: one line, not one per rank.
TEST(SpipCli, AnErrorEveryRankFindsIsPrintedOnce) {
  const Outcome outcome = run(std::string(SPIP_MPIEXEC) + " 2 -q " + SPIP_BIN + " " + base_args("budget") +
                              " --parallel.memory_gb 0.001");
  expect_one_line_error(outcome, 2, {"parallel.memory_gb allows 0.001 GB"});
}

// A scratch folder no file can be made in is found by the planner on every rank whose
// kept planes spill there: one line, exit 3, before any product exists. Found later,
// it was one line per rank and MPI's abort banner.
TEST(SpipCli, AnUnusableScratchFolderIsRefusedBeforeTheRun) {
  const fs::path file = scratch("scratch_is_a_file");
  std::ofstream(file).put('x');
  // The demo's CLEAN at 512^2 keeps 0.17 GB of planes, which a 0.3 GB budget cannot hold.
  const Outcome outcome = run(std::string(SPIP_MPIEXEC) + " 2 -q " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG + " " +
                              sample_args("scratch_out") + " --parallel.memory_gb 0.3 --parallel.scratch " +
                              (file / "x").string());
  expect_one_line_error(outcome, 3, {"parallel.scratch", "Not a directory"});
  EXPECT_FALSE(fs::exists(scratch("scratch_out") / "spip-dirty-I.fits.partial")) << "nothing may be written";
  // A mistyped path (its parent missing) is refused, not made.
  const fs::path mistyped = scratch("no_such_folder") / "kept";
  expect_one_line_error(run(std::string(SPIP_BIN) + " --config " + SPIP_DEMO_CONFIG + " " + sample_args("scratch_out2") +
                            " --parallel.memory_gb 0.3 --parallel.scratch " + mistyped.string()),
                        3, {"parallel.scratch", "No such file or directory"});
  EXPECT_FALSE(fs::exists(mistyped.parent_path())) << "a mistyped scratch path must not be made";
}

// A run clears what an earlier run of its prefix left: products this run does not make
// would pass for its own (the quick-look page once drew a 64-pixel run's catalogue on a
// 128-pixel run's maps). Another prefix's products in the folder are not touched.
TEST(SpipCli, ARunClearsAnEarlierRunsProductsOfItsPrefixAlone) {
  const fs::path out = scratch("earlier");
  ASSERT_EQ(run_spip(base_args("earlier") + " --input.channel_end 8 --catalogue.threshold 3").exit_code, 0);
  ASSERT_EQ(run_spip(base_args("earlier") + " --input.channel_end 8 --output.prefix other").exit_code, 0);
  std::ofstream(out / "spip-quicklook.png").put('x');
  for (const char* name : {"spip-FDF_tot_dirty.fits", "spip-dirty-I.fits", "spip-catalogue.csv", "spip-rmsf.txt"})
    ASSERT_TRUE(fs::exists(out / name)) << name;
  // A run that fails once it has started (its data column cut short) leaves the earlier
  // run's products as they were: they once went first, and nothing was left.
  const fs::path damaged = scratch("damaged.ms");
  fs::copy(oskar_ms, damaged, fs::copy_options::recursive);
  fs::resize_file(damaged / "table.f5_TSM0", fs::file_size(damaged / "table.f5_TSM0") / 2);
  const Outcome failed = run_spip("--input.ms " + damaged.string() + " --output.dir " + out.string() +
                                  " --parallel.threads 1 --image.size 64 --image.scale 120 --input.channel_end 8");
  ASSERT_EQ(failed.exit_code, 3) << failed.err;
  ASSERT_NE(failed.out.find("effective configuration in"), std::string::npos) << "it started:\n" << failed.out;
  for (const char* name : {"spip-FDF_tot_dirty.fits", "spip-dirty-I.fits", "spip-catalogue.csv", "spip-qa.json"})
    EXPECT_TRUE(fs::exists(out / name)) << name << " of the earlier run is gone after a failed run";
  const Outcome second = run_spip(base_args("earlier") + " --input.channel_end 8 --faraday.cubes none " +
                                  "--catalogue.threshold 0 --output.channel_cubes image");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("removed"), std::string::npos) << second.out;
  for (const char* name : {"spip-FDF_tot_dirty.fits", "spip-dirty-I.fits", "spip-catalogue.csv", "spip-quicklook.png"})
    EXPECT_FALSE(fs::exists(out / name)) << name << " of the earlier run is left";
  for (const char* name : {"spip-image-I.fits", "spip-peak-pi.fits", "spip-rmsf.txt", "spip-qa.json"})
    EXPECT_TRUE(fs::exists(out / name)) << name;
  for (const char* name : {"other-FDF_tot_dirty.fits", "other-dirty-I.fits", "other-qa.json"})
    EXPECT_TRUE(fs::exists(out / name)) << name << " of another prefix was removed";
  // The earlier run's cubes or catalogue as this run's input, under a name this run
  // would replace: refused before anything is removed, not deleted and then missed.
  const std::string cube_q = (out / "spip-image-Q.fits").string();
  expect_one_line_error(run_spip("--input.cube_q " + cube_q + " --input.cube_u " + (out / "spip-image-U.fits").string() +
                                 " --output.dir " + out.string() + " --parallel.threads 1"),
                        2, {cube_q, "output.prefix"});
  EXPECT_TRUE(fs::exists(cube_q));
  EXPECT_TRUE(fs::exists(out / "spip-image-I.fits"));
}

// On another imager's cubes the Faraday stage is the whole job: cubes with fewer than
// two channels of data are refused (exit 3, one line), not run to moments alone.
TEST(SpipCli, CubesWithoutTwoChannelsOfDataAreRefused) {
  const fs::path one = scratch("one_channel");
  ASSERT_EQ(run_spip(base_args("one_channel") + " --input.channel_end 1 --faraday.cubes none --catalogue.threshold 0 "
                     "--output.channel_cubes image-Q,image-U").exit_code, 0);
  const Outcome refused = run_spip("--input.cube_q " + (one / "spip-image-Q.fits").string() + " --input.cube_u " +
                                   (one / "spip-image-U.fits").string() + " --output.dir " +
                                   scratch("on_cubes").string() + " --parallel.threads 1");
  expect_one_line_error(refused, 3, {"1 channel(s) of data of 1", "RM synthesis needs at least two"});
  for (const char* name : {"spip-moment-mean-Q.fits", "spip-qa.json"})
    EXPECT_FALSE(fs::exists(scratch("on_cubes") / name)) << name;
}

// The same MS twice would double every visibility and weight.
TEST(SpipCli, TheSameMsTwiceIsRefused) {
  const std::string again = data_dir + "/../data/./oskar_small.ms/";
  expect_one_line_error(run_spip(base_args("twice") + " --input.ms " + again), 2,
                        {"input.ms names " + oskar_ms + " twice", "also as " + again});
  // A copy under another name cannot be told from a second observation of the same
  // channels: the run goes on, and says the inputs look alike.
  const fs::path copy = scratch("copy.ms");
  fs::copy(oskar_ms, copy, fs::copy_options::recursive);
  const Outcome copied = run_spip("--input.ms " + oskar_ms + " --input.ms " + copy.string() + " --output.dir " +
                                  scratch("copied").string() + " --input.freq_max 122e6 --image.size 64 "
                                  "--image.scale 120 --faraday.cubes none --parallel.threads 1");
  EXPECT_EQ(copied.exit_code, 0) << copied.err;
  EXPECT_NE(copied.out.find("WARNING: inputs " + oskar_ms + " and " + copy.string() +
                            " have the same rows, start, channels and phase centre"),
            std::string::npos)
      << copied.out;
}

// A truncated storage file: the column read and its file are named, and the table is
// called damaged (casacore's own message speaks of writing).
TEST(SpipCli, ADamagedTableNamesTheColumnAndItsFile) {
  const fs::path ms = scratch("damaged.ms");
  fs::copy(oskar_ms, ms, fs::copy_options::recursive);
  fs::resize_file(ms / "table.f1", fs::file_size(ms / "table.f1") / 2);
  const Outcome outcome = run_spip("--input.ms " + ms.string() + " --output.dir " + scratch("damaged_out").string() +
                                   " --parallel.threads 1 --image.size 64 --image.scale 120 --clean.niter 50");
  expect_one_line_error(outcome, 3, {ms.string() + ": column ", "(in " + (ms / "table.f1").string() + ")",
                                     "the table is damaged"});
}

// A read-only output folder: the system's reason, and the exit code of unusable output.
TEST(SpipCli, AReadOnlyOutputFolderSaysWhy) {
  const fs::path dir = scratch("read_only");
  fs::create_directories(dir);
  if (mount("tmpfs", dir.c_str(), "tmpfs", MS_RDONLY, "size=200m") != 0)
    GTEST_SKIP() << "cannot mount a read-only tmpfs here (needs root or CAP_SYS_ADMIN)";
  const Outcome outcome = run_spip(sample_args("read_only") + " --image.size 64 --image.scale 120");
  umount2(dir.c_str(), MNT_DETACH);
  expect_one_line_error(outcome, 3, {dir.string(), "Read-only file system"});
}

TEST(SpipCli, RunWritesItsEffectiveConfigurationAndSaysWhereInOneLine) {
  const Outcome outcome = run_spip(base_args("effective") + " --image.robust 0.5");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const fs::path ini = scratch("effective") / "spip-config.ini";
  EXPECT_NE(outcome.out.find("effective configuration in " + ini.string()), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("[clean]"), std::string::npos) << "the configuration belongs in its file, not the log";
  const std::string text = read_file(ini);
  EXPECT_NE(text.find("robust = 0.5"), std::string::npos) << text;
  // It is a configuration spip reads back as the same run.
  const Outcome again = run_spip("--config " + ini.string() + " --print-config");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, text);
}

// qa.json's total_s is the run's time as the log's "done in" gives it, planning
// included: it once started after planning, below the time stamps of the run's own
// last lines.
TEST(SpipCli, TheTotalTimeInQaIsTheLogsDoneIn) {
  const Outcome outcome = run_spip(base_args("total"));
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::smatch stamp, done, total;
  ASSERT_TRUE(std::regex_search(outcome.out, stamp,
                                std::regex(R"(\+([0-9.]+) s\] Faraday moments, RM synthesis and RM-CLEAN in)")))
      << outcome.out;
  ASSERT_TRUE(std::regex_search(outcome.out, done, std::regex(R"(\] done in ([0-9.]+) s)"))) << outcome.out;
  const std::string qa = read_file(scratch("total") / "spip-qa.json");
  ASSERT_TRUE(std::regex_search(qa, total, std::regex(R"("total_s": ([0-9.e+-]+))"))) << qa;
  const double total_s = std::stod(total[1]);
  EXPECT_GE(total_s, std::stod(stamp[1]) - 0.001) << "after the Faraday stage's last line";
  EXPECT_LE(total_s, std::stod(done[1]) + 0.001);
}

TEST(SpipCli, RunThatCannotFinishAChannelInItsTimeLimitStopsBeforeReading) {
  // Rank 0 creates the products with their headers only: the first channel's estimate is
  // the set-up and one channel's imaging, some tenths of a second on the sample.
  const Outcome outcome = run_spip(sample_args("late") + " --parallel.time_limit 0.01");
  expect_one_line_error(outcome, 2, {"a rank with 40 channels needs about", "to finish its first channel",
                                     "parallel.time_limit is 0.01 s"});
  EXPECT_FALSE(fs::exists(scratch("late"))) << "nothing may be written";
  std::printf("[ measured ] %s", outcome.err.c_str());
}

// Channel cubes that keep nothing a resumed run could take back (the restored image alone,
// while restoring waits for the common beam) make every start image every channel again:
// under a time limit the run needs more than one start for, requeues would never end, so
// it is refused; without one, the log warns. A trial's survey settings so made no progress.
TEST(SpipCli, ChannelCubesAResumedRunCannotUseAreRefusedUnderATimeLimit) {
  // Channels of about 0.1 s: at 128^2 (0.02 s) the set-up's noise between two runs on a
  // loaded machine (a second or more) was more than the 40 channels' time, and the
  // second run, timed faster than the first, fitted the limit and ran.
  const std::string job = std::string(SPIP_BIN) + " --config " + SPIP_DEMO_CONFIG + " " + sample_args("images") +
                          " --image.size 512 --image.scale 10 --output.channel_cubes image";
  const Outcome rates = run(job + " --parallel.time_limit 0.001");
  std::smatch timed;
  ASSERT_TRUE(std::regex_search(rates.err, timed, std::regex(R"(\(set-up ([0-9.]+) s, imaging ([0-9.]+) s per channel\))")))
      << rates.err;
  // Room for 16 channels in a start, not for the rank's 40 (the set-up is given to 0.1
  // s): refused for these cubes unless the second run images 2.5 times faster than the
  // first was timed, and unless it is 16 times slower (then not one channel fits a start,
  // which is refused for that).
  const double limit = std::stod(timed[1]) + 0.25 + 16 * std::stod(timed[2]);
  const Outcome refused = run(job + " --parallel.time_limit " + std::to_string(limit));
  expect_one_line_error(refused, 2, {"output.channel_cubes does not write the image, residual and model cubes",
                                     "; write all Stokes of the image, residual and model cubes"});
  EXPECT_FALSE(fs::exists(scratch("images"))) << "nothing may be written";
  const Outcome plan = run(job + " --plan --plan-ranks 1");
  // The cubes it lacks, named: it writes the image.
  EXPECT_NE(plan.out.find("warning: output.channel_cubes does not write every Stokes of the residual and model cubes, "
                          "from which a stopped run takes back the channels it finished"),
            std::string::npos) << plan.out;
  // With image.beam each channel is restored as it is imaged: image and residual suffice.
  const Outcome restored_at_once = run(job + ",residual --image.beam 200,150,0 --plan --plan-ranks 1");
  ASSERT_EQ(restored_at_once.exit_code, 0) << restored_at_once.err;
  EXPECT_NE(restored_at_once.out.find("suggested:"), std::string::npos) << restored_at_once.out;
  EXPECT_EQ(restored_at_once.out.find("warning: output.channel_cubes"), std::string::npos) << restored_at_once.out;
}

// --plan times its rates by imaging one channel here: a channel larger than this
// node's memory (a job planned on a login node for bigger nodes) is refused in one line
// at once, before anything is allocated, instead of taking the node's memory.
TEST(SpipCli, PlanRefusesToTimeAChannelLargerThanThisNode) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double total_kb = 0;
  while (meminfo >> key >> total_kb && key != "MemTotal:") meminfo.ignore(256, '\n');
  ASSERT_GT(total_kb, 0);
  // About 190 B a pixel at least: twice the node's memory, a budget that allows it. The
  // address space is held to the node's memory, so that a spip that tried anyway would
  // fail to allocate rather than wake the OOM killer.
  const int size = static_cast<int>(std::sqrt(2 * total_kb * 1024 / 190)) / 8 * 8;
  const Outcome plan = run("ulimit -v " + std::to_string(static_cast<long long>(total_kb)) + "; " + SPIP_BIN + " " +
                           sample_args("huge") + " --image.size " + std::to_string(size) +
                           " --image.scale 1 --parallel.memory_gb " + std::to_string(4 * total_kb / 1e6) +
                           " --plan --plan-ranks 1");
  expect_one_line_error(plan, 2, {"timing the rates here would image one channel in", "more than this node's",
                                  "--plan-rates"});
  EXPECT_TRUE(plan.out.empty()) << plan.out;
}

TEST(SpipCli, PlanPrintsEveryRankAndTheJobToAskFor) {
  const Outcome plan = run_spip(sample_args("plan") + " --image.size 256 --faraday.phi_max 60 --faraday.dphi 1 --plan --plan-ranks 3");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  // 40 channels of 9936 rows over 3 ranks: 13, 14 and 13 channels.
  for (const char* row : {"0         [0, 13)         129168", "1        [13, 27)         139104",
                          "2        [27, 40)         129168"})
    EXPECT_NE(plan.out.find(row), std::string::npos) << row << " not in:\n" << plan.out;
  EXPECT_NE(plan.out.find("121 Faraday depths"), std::string::npos) << plan.out;
  // Without CLEAN: 9 channel cubes (dirty, restored, PSF) of 40 planes, 20 moments, 9 pixel
  // maps, the RMSF width map and 6 cubes of 121 depths, of 256^2 float pixels: 0.2921 GB
  // before headers, 0.2923 GB with them.
  EXPECT_NE(plan.out.find("products: 0.29 GB in " + scratch("plan").string() + ": 9 channel cubes 94.5 MB, "
                          "20 moment images 5.5 MB, 6 FDF cubes 0.19 GB, 12 pixel maps 3.3 MB, 3 RMSF files 0.3 MB"),
            std::string::npos)
      << plan.out;
  // One node or several: as many ranks a node as its cores hold (PlanSuggestsTheScript...).
  EXPECT_NE(plan.out.find("suggested: "), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find(" sbatch --"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find(" --cpus-per-task=1 --mem-per-cpu="), std::string::npos) << plan.out;
  EXPECT_FALSE(fs::exists(scratch("plan"))) << "a plan writes nothing";
  std::printf("[ measured ] %s", plan.out.c_str());

  // Under mpiexec, one plan for the ranks it runs on, from rank 0.
  const Outcome two = run(std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " " + sample_args("plan2") +
                          " --image.size 128 --plan");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.out.find("plan: 2 rank(s)"), std::string::npos) << two.out;
  EXPECT_EQ(two.out.find("plan:"), two.out.rfind("plan:")) << "printed more than once:\n" << two.out;

  // Four ranks for two channels: two groups of two, each member with 0.75 of the rows at most.
  const Outcome groups =
      run_spip(sample_args("plan4") + " --image.size 128 --input.channel_end 2 --plan --plan-ranks 4");
  ASSERT_EQ(groups.exit_code, 0) << groups.err;
  EXPECT_NE(groups.out.find("groups: 2 of 2 ranks, each member gridding its share of every channel's rows, the first "
                            "keeping and writing the channels (4 ranks for 2 channel(s): groups of 2 keep every rank "
                            "busy); a member's time is counted as that of whole channels"),
            std::string::npos)
      << groups.out;
  for (const char* row : {"1          [0, 1)           7452", "2          [1, 2)           7452"})
    EXPECT_NE(groups.out.find(row), std::string::npos) << row << " not in:\n" << groups.out;
}

// The memory line is the one MemoryNeeds both make, for --plan from the metadata and for
// the run from the rows it counts: on a sample without flagged rows they must agree.
TEST(SpipCli, PlanAndRunAgreeOnTheMemoryPlan) {
  const auto memory_line = [](const std::string& out) {
    const std::size_t at = out.find("memory budget of");
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
  };
  const std::string mpiexec = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " ";
  const Outcome plan = run(mpiexec + base_args("memory_plan") + " --plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Outcome job = run(mpiexec + base_args("memory_run"));
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_NE(memory_line(plan.out), "(none)") << plan.out;
  EXPECT_EQ(memory_line(plan.out), memory_line(job.out));
  std::printf("[ measured ] %s\n", memory_line(job.out).c_str());
}

// --plan-ranks N plans for N ranks over nodes like this one: as many share a node's
// memory as its cores hold (here 2 cores: 2 ranks a node), not all N. Planned as one
// node's 512 ranks, the sample did not fit; --plan-node-ranks says how many share it.
TEST(SpipCli, PlanSharesANodesMemoryAmongTheRanksItsCoresHold) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const Outcome many = run_spip(sample_args("plan512") + " --image.size 128 --input.channel_end 2 --plan --plan-ranks 512");
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_NE(many.out.find("memory: " + std::to_string(std::min(cores, 512L)) + " rank(s) a node"), std::string::npos)
      << many.out;
  expect_one_line_error(run_spip(sample_args("plan512n") + " --image.size 128 --input.channel_end 2 --plan --plan-ranks 512 " +
                                 "--plan-node-ranks 100000"),
                        2, {"parallel.memory_gb allows"});
  expect_one_line_error(run_spip(sample_args("plan_n0") + " --plan --plan-node-ranks 0"), 2, {"--plan-node-ranks 0"});
}

// Ranks beyond one node's are suggested with the multi-node script, on as many nodes as
// they need and no more ranks than planned, and each script by a path that reaches it
// from this build (from a checkout, with the SPIP_HOME its scripts find the job body by).
TEST(SpipCli, PlanSuggestsTheScriptForAsManyNodesAsTheRanksNeed) {
  const auto suggested = [](const std::string& options) {
    const Outcome plan = run_spip(sample_args("plan_script") + " --image.size 128 --plan " + options);
    EXPECT_EQ(plan.exit_code, 0) << plan.err;
    return plan.out.substr(std::min(plan.out.size(), plan.out.find("suggested: ")));
  };
  const std::string many = suggested("--plan-ranks 20 --plan-node-ranks 8");
  EXPECT_NE(many.find("sbatch --nodes=3 --ntasks-per-node=8 --ntasks=20 --cpus-per-task="), std::string::npos) << many;
  const std::string few = suggested("--plan-ranks 2 --plan-node-ranks 8");
  EXPECT_NE(few.find("sbatch --ntasks=2 --cpus-per-task="), std::string::npos) << few;
  for (const auto& [line, script] : {std::pair{many, "multi-node.sbatch"}, {few, "one-node.sbatch"}}) {
    const std::size_t at = line.find(script);
    ASSERT_NE(at, std::string::npos) << line;
    const std::string path = line.substr(line.rfind(' ', at) + 1, at + std::string(script).size() - line.rfind(' ', at) - 1);
    EXPECT_TRUE(fs::is_regular_file(path)) << path << " from: " << line;
    if (const std::size_t home = line.find("SPIP_HOME="); home != std::string::npos) {
      const std::string dir = line.substr(home + 10, line.find(' ', home) - home - 10);
      EXPECT_TRUE(fs::is_regular_file(fs::path(dir) / "slurm" / "spip-job.sh")) << dir << " from: " << line;
    }
  }
}

// multi-node-gpu.sbatch gives each rank a GPU of its own, so a GPU job's plan puts no
// more ranks on a node than it has GPUs, and a node without any (this one in CI) says that
// --plan-node-ranks must give the job's; the suggested line asks what the memory line says.
TEST(SpipCli, PlanForAGpuJobPutsNoMoreRanksOnANodeThanItsGpus) {
  const Outcome plan =
      run_spip(sample_args("plan_gpu") + " --image.size 128 --parallel.device gpu --plan --plan-ranks 20");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const std::size_t memory = plan.out.find("memory: ");
  ASSERT_NE(memory, std::string::npos) << plan.out;
  const std::string line = plan.out.substr(memory, plan.out.find('\n', memory) - memory);
  const int per_node = std::stoi(line.substr(8));
  if (const std::size_t gpus = line.find(" visible GPU(s)"); gpus != std::string::npos)
    EXPECT_LE(per_node, std::stoi(line.substr(line.rfind(' ', gpus - 1) + 1))) << line;
  else
    EXPECT_NE(line.find("no GPU to count; parallel.device = gpu gives each rank a GPU of its own, so give "
                        "--plan-node-ranks the job's GPUs a node"),
              std::string::npos)
        << line;
  EXPECT_NE(plan.out.find("--nodes=" + std::to_string((20 + per_node - 1) / per_node) +
                          " --ntasks-per-node=" + std::to_string(per_node)),
            std::string::npos)
      << plan.out;
  EXPECT_NE(plan.out.find("multi-node-gpu.sbatch"), std::string::npos) << plan.out;
  const Outcome given =
      run_spip(sample_args("plan_gpu4") + " --image.size 128 --parallel.device gpu --plan --plan-ranks 20 --plan-node-ranks 4");
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_NE(given.out.find("--nodes=5 --ntasks-per-node=4 --cpus-per-task="), std::string::npos) << given.out;
}

TEST(SpipCli, PlanReadsRatesFromAPreviousRunsQa) {
  ASSERT_EQ(run_spip(base_args("rates")).exit_code, 0);
  const fs::path qa = scratch("rates") / "spip-qa.json";
  const Outcome plan = run_spip(base_args("rates_plan") + " --plan --plan-rates " + qa.string());
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("rates measured by the run of " + qa.string()), std::string::npos) << plan.out;
  expect_one_line_error(run_spip(base_args("rates_bad") + " --plan --plan-rates " + oskar_ms + "/table.dat"), 3,
                        {"table.dat", "not a spip qa.json"});
  expect_one_line_error(run_spip(base_args("rates_alone") + " --plan-rates " + qa.string()), 2,
                        {"--plan-ranks, --plan-node-ranks and --plan-rates go with --plan"});
}

// --plan times RM synthesis and RM-CLEAN on a sample of the run's depth axis: for 1.56
// million depths, 4096 pixels' spectra would take 51 GB (it ended in bad_alloc).
TEST(SpipCli, PlanTimesALongDepthAxisOnASample) {
  const Outcome plan = run_spip(sample_args("long_axis") + " --faraday.phi_max 1e5 --plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("1564303 Faraday depths"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("Faraday stage"), std::string::npos) << plan.out;
}

TEST(SpipCli, RunsThatCannotFitStopBeforeWritingAnything) {
  // Memory: an image no rank can hold is refused at planning time, not by bad_alloc.
  const Outcome huge = run_spip(sample_args("huge") + " --image.size 5000000 --image.scale 0.05");
  expect_one_line_error(huge, 2, {"imaging 5000000^2 pixels", "GB per rank (the process itself 0.060 GB), but parallel.memory_gb allows"});
  EXPECT_FALSE(fs::exists(scratch("huge"))) << "nothing may be written";
  // The same with multiscale CLEAN on automatic scales: its buffers are planned (and
  // named) without making any kernel of that size.
  expect_one_line_error(run_spip(sample_args("huge_multiscale") +
                                 " --image.size 5000000 --image.scale 0.05 --clean.niter 10 --clean.multiscale true"),
                        2, {"imaging 5000000^2 pixels", "(the process itself 0.060 GB, CLEAN's buffers", "clean.scales"});
  // Memory: one row of a Faraday spectrum too long for the budget.
  expect_one_line_error(run_spip(sample_args("depths") + " --faraday.phi_max 100000 --faraday.dphi 0.01 "
                                 "--parallel.memory_gb 1"),
                        2, {"the Faraday stage needs", "one image row", "parallel.memory_gb allows 1.00 GB"});
  // Depths: an axis no int indexes (1.6e10 depths at the sample's default step) is
  // refused before anything is imaged.
  const Outcome axis = run_spip(sample_args("axis") + " --faraday.phi_max 1e9");
  expect_one_line_error(axis, 2, {"faraday.phi_max 1e+09 rad/m^2", "Faraday depths, more than the 1073741823"});
  EXPECT_FALSE(fs::exists(scratch("axis"))) << "nothing may be written";
  // Disk: 6 Faraday depth cubes of 8 x 10^5 depths at 4096^2 pixels need ~300 TB.
  const Outcome disk = run_spip(sample_args("disk") + " --image.size 4096 --faraday.phi_max 20000 --faraday.dphi 0.05"
                                " --parallel.memory_gb 200");
  expect_one_line_error(disk, 3, {"the products need", "GB in " + scratch("disk").string(), "GB free"});
  EXPECT_FALSE(fs::exists(scratch("disk"))) << "nothing may be written";
  std::printf("[ measured ] %s", disk.err.c_str());
}

TEST(SpipCli, GpuRequestWithoutAGpuIsAClearError) {
  const Outcome outcome = run_spip(base_args("gpu") + " --parallel.device gpu");
  if (outcome.exit_code == 0) GTEST_SKIP() << "a usable GPU is present";
  expect_one_line_error(outcome, 2, {"parallel.device = gpu", "no usable GPU"});
  // The GPU backend masks and runs the sub-minor loop too: only the missing GPU is named.
  const Outcome masked = run_spip(base_args("gpu_masked") +
                                  " --parallel.device gpu --clean.auto_threshold 1 --clean.auto_mask 3 --clean.subminor true");
  expect_one_line_error(masked, 2, {"parallel.device = gpu", "no usable GPU"});
}

TEST(SpipCli, AutoDeviceFallsBackToCpuAndSaysSo) {
  const Outcome outcome = run_spip(base_args("auto") + " --parallel.device auto");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const bool gpu = outcome.out.find("-> GPU") != std::string::npos;
  if (!gpu) {
    EXPECT_NE(outcome.out.find("use the CPU backend"), std::string::npos) << outcome.out;
    // Once a node, not once a rank.
    const Outcome two = run(std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " " + base_args("auto2") +
                            " --parallel.device auto");
    ASSERT_EQ(two.exit_code, 0) << two.err;
    int lines = 0;
    for (std::size_t at = two.out.find("no GPU on this node"); at != std::string::npos;
         at = two.out.find("no GPU on this node", at + 1))
      ++lines;
    EXPECT_EQ(lines, 1) << two.out;
  }
}

TEST(SpipCli, ProductsDoNotDependOnTheNumberOfRanks) {
  const auto qa = [](const std::string& dir) { return scratch(dir) / "spip-qa.json"; };
  const std::string mpiexec = SPIP_MPIEXEC;
  ASSERT_EQ(run(mpiexec + " 1 " + SPIP_BIN + " " + base_args("one")).exit_code, 0);
  const Outcome three = run(mpiexec + " 3 " + SPIP_BIN + " " + base_args("three"));
  ASSERT_EQ(three.exit_code, 0) << three.err;
  const std::vector<std::string> one_rank = channel_records(qa("one"));
  ASSERT_EQ(one_rank.size(), 40u);
  EXPECT_EQ(one_rank, channel_records(qa("three")));
  EXPECT_NE(one_rank[0].find("\"visibilities\": 9936"), std::string::npos) << one_rank[0];
  EXPECT_NE(three.out.find("[spip 2/3"), std::string::npos) << "every rank logs";
  EXPECT_FALSE(fs::exists(qa("three").string() + ".partial"));
}

// Every Faraday product (moments, depth cubes, peak maps) of one rank working in many
// small row groups, its kept planes spilled to parallel.scratch, matches that of three
// ranks with one group each, their planes in memory and exchanged over MPI. Neither run
// reads a product back, and the ranks send each other exactly the rows the slabs need.
TEST(SpipCli, FaradayProductsDoNotDependOnRowGroupsOrRanks) {
  const std::string mpiexec = SPIP_MPIEXEC;
  const fs::path kept = scratch("kept");
  const Outcome groups =
      run_spip(base_args("groups") + " --parallel.memory_gb 0.08 --parallel.scratch " + kept.string());
  ASSERT_EQ(groups.exit_code, 0) << groups.err;
  const std::smatch count = [&] {
    std::smatch m;
    std::regex_search(groups.out, m, std::regex(R"(rows \[0, 64\) in (\d+) group)"));
    return m;
  }();
  ASSERT_FALSE(count.empty()) << groups.out;
  EXPECT_GE(std::stoi(count[1]), 4) << "the small budget must split the slab";
  EXPECT_NE(groups.out.find("they go to a file in " + kept.string()), std::string::npos) << groups.out;
  EXPECT_TRUE(fs::is_empty(kept)) << "the kept planes' file has no name and is gone with the run";
  const Outcome ranks = run(mpiexec + " 3 " + SPIP_BIN + " " + base_args("ranks"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  EXPECT_NE(ranks.out.find("in 1 group(s)"), std::string::npos) << ranks.out;

  const auto rank_records = [](const std::string& dir) {
    return nlohmann::json::parse(read_file(scratch(dir) / "spip-qa.json")).at("ranks");
  };
  const nlohmann::json one = rank_records("groups").at(0);
  EXPECT_EQ(one.at("faraday_product_bytes_read").get<double>(), 0.0);
  EXPECT_EQ(one.at("faraday_mpi_bytes").get<double>(), 0.0);
  // Read back once each: every channel's model and residual for restoring (8 planes),
  // then its restored I, Q, U, V and residual Q, U for the Faraday stage (6).
  EXPECT_EQ(one.at("scratch_bytes_read").get<double>(), 40.0 * (8 + 6) * 64 * 64 * 4);
  for (const nlohmann::json& rank : rank_records("ranks")) {
    // Each rank sends its channels' six kept planes over every row outside its own slab.
    const int r = rank.at("rank").get<int>();
    const int channels = rank.at("channel_end").get<int>() - rank.at("channel_begin").get<int>();
    const int slab = 64 * (r + 1) / 3 - 64 * r / 3;
    EXPECT_EQ(rank.at("faraday_mpi_bytes").get<double>(), channels * 6.0 * (64 - slab) * 64 * 4) << r;
    EXPECT_EQ(rank.at("faraday_product_bytes_read").get<double>(), 0.0) << r;
    EXPECT_EQ(rank.at("scratch_bytes_read").get<double>(), 0.0) << r;
  }

  int compared = 0;
  double worst = 0;
  for (const auto& entry : fs::directory_iterator(scratch("groups"))) {
    const std::string name = entry.path().filename().string();
    const bool faraday = name.find("-moment-") != std::string::npos || name.find("-FDF_") != std::string::npos ||
                         name.find("-fdf-") != std::string::npos || name.find("-peak-") != std::string::npos ||
                         name.find("-rmclean-") != std::string::npos || name.find("-RMSF_FWHM") != std::string::npos;
    if (!faraday) continue;
    const auto a = spip::fits::read_image(entry.path().string());
    const auto b = spip::fits::read_image((scratch("ranks") / name).string());
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    double largest = 0, difference = 0;
    for (std::size_t i = 0; i < a.data.size(); ++i) {
      ASSERT_EQ(std::isnan(a.data[i]), std::isnan(b.data[i])) << name << " pixel " << i;
      if (std::isnan(a.data[i])) continue;
      largest = std::max(largest, static_cast<double>(std::abs(a.data[i])));
      difference = std::max(difference, static_cast<double>(std::abs(a.data[i] - b.data[i])));
    }
    EXPECT_EQ(difference, 0.0) << name << ": docs/architecture.md says bit for bit";
    worst = std::max(worst, largest > 0 ? difference / largest : 0.0);
    ++compared;
  }
  EXPECT_EQ(compared, 20 + 6 + 10);  // moments, FDF cubes, pixel maps with RMSF_FWHM
  std::printf("[ measured ] %d Faraday products, %s row groups vs 3 ranks: largest difference %.2e of the peak\n",
              compared, count[1].str().c_str(), worst);
}

// RM synthesis gives each pixel the same bits however the threads share the row group:
// with 1,601 depths, one thread and two differed by 1e-9 of the FDF's peak where every
// thread's share was one cgemm call, whose shape OpenBLAS's order of summing follows.
TEST(SpipCli, FaradayProductsDoNotDependOnThreads) {
  const auto args = [](const std::string& name, int threads) {
    std::string line = sample_args(name) + " --image.size 128 --image.scale 40 --clean.niter 0 --faraday.phi_max 200" +
                       " --faraday.dphi 0.25 --faraday.rmclean_niter 0 --output.channel_cubes none" +
                       " --faraday.cubes real-dirty,imag-dirty";
    line.replace(line.find("--parallel.threads 1"), 20, "--parallel.threads " + std::to_string(threads));
    return line;
  };
  ASSERT_EQ(run_spip(args("one_thread", 1)).exit_code, 0);
  ASSERT_EQ(run_spip(args("two_threads", 2)).exit_code, 0);
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(scratch("one_thread"))) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".fits") || name.find("catalogue") != std::string::npos || name.find("rmtable") != std::string::npos)
      continue;
    const auto a = spip::fits::read_image(entry.path().string());
    const auto b = spip::fits::read_image((scratch("two_threads") / name).string());
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(0, std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float))) << name;
    ++compared;
  }
  EXPECT_GE(compared, 30);
}

// A depth axis that samples the RMSF FWHM fewer than 5 times is warned about: the
// demo's 0.5 rad/m^2 samples the sample's 1.27 rad/m^2 2.5 times; the default 10.
TEST(SpipCli, ACoarseDepthAxisIsWarnedAbout) {
  const Outcome coarse = run_spip(base_args("coarse") + " --faraday.dphi 0.5 --faraday.phi_max 20");
  ASSERT_EQ(coarse.exit_code, 0) << coarse.err;
  const std::string warning = "warning: faraday.dphi 0.5 rad/m^2 samples the RMSF FWHM (1.274 rad/m^2, every channel "
                              "weighted alike) 2.5 times";
  const std::size_t warned = coarse.out.find(warning), imaged = coarse.out.find("channel 0:");
  ASSERT_NE(warned, std::string::npos) << coarse.out;
  ASSERT_NE(imaged, std::string::npos) << coarse.out;
  EXPECT_LT(warned, imaged) << "before any channel is imaged";
  const Outcome plan = run_spip(base_args("plan") + " --faraday.dphi 0.5 --faraday.phi_max 20 --plan");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find(warning), std::string::npos) << "and by --plan:\n" << plan.out;
  const Outcome fine = run_spip(base_args("fine") + " --faraday.phi_max 20");
  ASSERT_EQ(fine.exit_code, 0) << fine.err;
  EXPECT_EQ(fine.out.find("samples the RMSF FWHM"), std::string::npos) << fine.out;
}

// An input of coarser channels beside the sample (2.4 MHz apart on its 1.2 MHz axis)
// leaves a blank plane between each two of its channels. The log says which input, why,
// and how to bin every input onto one axis; the sample, whose channels set the step, is
// not named.
TEST(SpipCli, AnInputOfCoarserChannelsIsNamed) {
  const fs::path coarse = scratch("coarse.ms");
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + data_dir + "/oskar_small.sky.txt --telescope " + data_dir +
                "/oskar_small.tm --out " + coarse.string() + " --channels 4 --freq-start 169.8e6 --freq-inc 2.4e6 "
                "--times 8")
                .exit_code,
            0);
  const Outcome outcome = run_spip(sample_args("coarse") + " --input.ms " + coarse.string() +
                                   " --image.size 64 --image.scale 120 --clean.niter 0 --faraday.cubes none");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("48 channels from 120.6000 MHz in steps of 1200.000 kHz, 4 of them in gaps"),
            std::string::npos)
      << outcome.out;
  EXPECT_NE(outcome.out.find("input " + coarse.string() + ": its channels are 2400.000 kHz apart, 2.0 times the axis's "
                             "step, so that its part of the band has blank planes between its channels; "
                             "image.channel_width 2400000 bins"),
            std::string::npos)
      << outcome.out;
  EXPECT_EQ(outcome.out.find("input " + oskar_ms + ": its channels are"), std::string::npos) << outcome.out;
}

TEST(SpipCli, ReadAheadInSmallBlocksGivesTheSameProducts) {
  const auto qa = [](const std::string& dir) { return scratch(dir) / "spip-qa.json"; };
  const Outcome whole = run_spip(base_args("whole"));
  ASSERT_EQ(whole.exit_code, 0);
  // 120" pixels under the sample's beam, about 100" across its minor axis at the top of
  // the band; the resume tests' 20" pixels sample it 5 times, and say nothing.
  EXPECT_NE(whole.out.find("'s beam is "), std::string::npos) << whole.out;
  EXPECT_NE(whole.out.find(" pixels: fewer than 3 under-sample it"), std::string::npos) << whole.out;
  const Outcome blocks = run_spip(base_args("blocks") + " --input.block_channels 3");
  ASSERT_EQ(blocks.exit_code, 0) << blocks.err;
  EXPECT_EQ(channel_records(qa("whole")), channel_records(qa("blocks")));
}

// Also: with image.common_beam = false, every restored cube carries each channel's own
// beam, from both ranks, in CASA's BEAMS table, as qa.json reports it.
TEST(SpipCli, FixedChannelBlocksMustHoldEveryChannel) {
  expect_one_line_error(run_spip(base_args("fixed") + " --parallel.channels_per_rank 5"), 2,
                        {"parallel.channels_per_rank = 5", "40 channels", "at least 40"});
  const std::string mpiexec = SPIP_MPIEXEC;
  const Outcome outcome = run(mpiexec + " 2 " + SPIP_BIN + " " + base_args("fixed_ok") +
                              " --parallel.channels_per_rank 30 --image.common_beam false");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const std::string qa = read_file(scratch("fixed_ok") / "spip-qa.json");
  EXPECT_NE(qa.find("\"channel_begin\": 30, \"channel_end\": 40"), std::string::npos) << qa.substr(qa.find("ranks"));

  std::vector<double> qa_major;
  const std::regex major(R"("beam_major_arcsec": ([-0-9.e]+))");
  for (auto it = std::sregex_iterator(qa.begin(), qa.end(), major); it != std::sregex_iterator(); ++it)
    qa_major.push_back(std::stod((*it)[1]));
  ASSERT_EQ(qa_major.size(), 40u);
  for (const char* stokes : {"I", "Q", "U", "V"}) {
    const fs::path cube = scratch("fixed_ok") / (std::string("spip-image-") + stokes + ".fits");
    EXPECT_EQ(spip::fits::read_image(cube.string()).text("CASAMBM"), "T");
    const spip::fits::Table beams = spip::fits::read_table(cube.string(), {"NCHAN"});
    EXPECT_EQ(beams.extname, "BEAMS");
    EXPECT_EQ(beams.keys.at(0).value, 40.0);
    const std::vector<double>& bmaj = beams.values<double>("BMAJ");
    ASSERT_EQ(bmaj.size(), 40u);
    for (std::size_t c = 0; c < 40; ++c) EXPECT_NEAR(bmaj[c], qa_major[c], 1e-5 * qa_major[c]) << stokes << c;
  }
  // The channels' beams differ (at 120" pixels the fit is pixel-limited, so not as 1/nu):
  // one beam written for all would not match.
  EXPECT_GT(*std::max_element(qa_major.begin(), qa_major.end()) / *std::min_element(qa_major.begin(), qa_major.end()),
            1.1);
  EXPECT_FALSE(fs::exists(scratch("fixed_ok") / "spip-dirty-I.fits.partial"));
}

// spip runs itself again with GOMP_SPINCOUNT=1000 (spip_main.cpp), under mpiexec too,
// unless the user chose how OpenMP threads wait.
TEST(SpipCli, OpenMpThreadsSpinBrieflyUnlessTheUserChose) {
  const std::string mpiexec = SPIP_MPIEXEC;
  const std::string args = base_args("spin") + " --input.channel_end 2";
  const Outcome chosen_here = run("unset OMP_WAIT_POLICY GOMP_SPINCOUNT; " + mpiexec + " 2 " + SPIP_BIN + " " + args);
  ASSERT_EQ(chosen_here.exit_code, 0) << chosen_here.err;
  const std::regex announced(R"(OpenMP thread\(s\) \(GOMP_SPINCOUNT 1000\))");  // one line a rank
  const auto lines = std::distance(std::sregex_iterator(chosen_here.out.begin(), chosen_here.out.end(), announced),
                                   std::sregex_iterator());
  EXPECT_EQ(lines, 2) << chosen_here.out;
  const Outcome chosen_by_user =
      run("unset GOMP_SPINCOUNT; OMP_WAIT_POLICY=passive " + std::string(SPIP_BIN) + " " + base_args("spin_user") +
          " --input.channel_end 2");
  ASSERT_EQ(chosen_by_user.exit_code, 0) << chosen_by_user.err;
  EXPECT_NE(chosen_by_user.out.find("OpenMP thread(s) (GOMP_SPINCOUNT unset)"), std::string::npos) << chosen_by_user.out;
}

// Three ranks cannot form equal groups for two channels (tests/pipeline/test_rank_groups
// has ranks that can): one of them idles.
TEST(SpipCli, MoreRanksThanChannelsIdleAndSaySo) {
  const std::string mpiexec = SPIP_MPIEXEC;
  const Outcome outcome = run(mpiexec + " 3 " + SPIP_BIN + " " + base_args("idle") +
                              " --input.channel_begin 10 --input.channel_end 12");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("no channels and idles"), std::string::npos) << outcome.out;
  EXPECT_EQ(channel_records(scratch("idle") / "spip-qa.json").size(), 2u);
}

TEST(SpipCli, AFullyFlaggedChannelIsBlankedNotFatal) {
  const fs::path ms = scratch("rfi.ms");
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + data_dir + "/oskar_small.sky.txt --template " + oskar_ms +
                " --out " + ms.string() + " --flag-channels 5")
                .exit_code,
            0);
  const std::string mpiexec = SPIP_MPIEXEC;
  const Outcome outcome = run(mpiexec + " 2 " + SPIP_BIN + " --input.ms " + ms.string() + " --output.dir " +
                              scratch("out").string() + " --image.size 64 --image.scale 120 --parallel.threads 1");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("channel 5 is blank: every visibility flagged"), std::string::npos);
  // Cubes are created without pixels: the blank plane must be written as NaN in every
  // channel cube, all of it, and its neighbours imaged.
  int cubes = 0;
  for (const auto& entry : fs::directory_iterator(scratch("out"))) {
    if (entry.path().extension() != ".fits") continue;
    const auto cube = spip::fits::read_image(entry.path().string());
    if (cube.shape.size() < 3 || cube.text("CTYPE3") != "FREQ") continue;
    ++cubes;
    const std::size_t plane = 64 * 64;
    std::size_t nan_in_5 = 0, nan_in_4 = 0;
    for (std::size_t i = 0; i < plane; ++i) {
      nan_in_5 += std::isnan(cube.data[5 * plane + i]);
      nan_in_4 += std::isnan(cube.data[4 * plane + i]);
    }
    EXPECT_EQ(nan_in_5, plane) << entry.path();
    EXPECT_EQ(nan_in_4, 0u) << entry.path();
  }
  EXPECT_EQ(cubes, 9);  // without CLEAN: dirty and image of I, Q, U, V, and the PSF
  EXPECT_TRUE(fs::exists(scratch("out") / "spip-peak-phi.fits"));
}

// A QA number of every channel of a qa.json.
std::vector<double> qa_values(const fs::path& qa, const std::string& key) {
  const std::string text = read_file(qa);
  std::vector<double> values;
  const std::regex field("\"" + key + "\": ([-0-9.e+]+|null)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), field); it != std::sregex_iterator(); ++it)
    values.push_back((*it)[1] == "null" ? std::nan("") : std::stod((*it)[1]));
  return values;
}

// The sample's layout and channels with an empty sky and 0.1 Jy of noise per
// correlation, in the test's scratch folder; empty if spip-simulate failed.
fs::path noise_only_ms() {
  const fs::path sky = scratch("zero.sky.txt");
  std::ofstream(sky) << "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex\n"
                        "\"nothing\", 0.0, 60.0, 0.0, , , 0.0, 144000000.0, 0.0\n";
  const fs::path ms = scratch("noise.ms");
  const Outcome sim = run(std::string(SPIP_SIMULATE_BIN) + " --sky " + sky.string() + " --template " + oskar_ms +
                          " --out " + ms.string() + " --noise 0.1");
  return sim.exit_code == 0 ? ms : fs::path();
}

// On a noise-only MS the automatic threshold compares each search value with the noise
// of that same quantity, so CLEAN finds almost nothing. At 3 sigma a pixel of pure
// noise passes with probability 2.9e-7 for iquv (chi^2, 4 degrees of freedom, above 36)
// and 1.2e-4 for pol (2 degrees of freedom, above 18); a 64^2 image with a beam of ~2.3
// pixels has ~1,800 independent samples, so iquv expects 5e-4 false peaks per channel
// and pol 0.2, each cleaned in a few iterations.
TEST(SpipCli, AutoThresholdOnNoiseAloneTakesAlmostNoComponents) {
  const fs::path ms = noise_only_ms();
  ASSERT_FALSE(ms.empty());
  const auto clean = [&](const std::string& peak) {
    const Outcome outcome =
        run_spip("--input.ms " + ms.string() + " --output.dir " + scratch(peak).string() +
                 " --image.size 64 --image.scale 120 --clean.niter 10000 --clean.auto_threshold 3 --clean.peak " +
                 peak + " --faraday.cubes none --parallel.threads 1");
    EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
    return scratch(peak) / "spip-qa.json";
  };
  const fs::path iquv = clean("iquv"), pol = clean("pol");
  const std::vector<double> iquv_iterations = qa_values(iquv, "iterations");
  ASSERT_EQ(iquv_iterations.size(), 40u);
  const double iquv_total = std::accumulate(iquv_iterations.begin(), iquv_iterations.end(), 0.0);
  const std::vector<double> pol_iterations = qa_values(pol, "iterations");
  const double pol_total = std::accumulate(pol_iterations.begin(), pol_iterations.end(), 0.0);
  EXPECT_LE(iquv_total, 2) << "expected 0.02 false peaks in 40 channels";
  EXPECT_LE(pol_total, 40) << "expected ~8 false peaks in 40 channels, a few iterations each";
  // The joined noise is that of four planes of equal noise: twice sigma of Stokes I.
  const double noise = qa_values(iquv, "search_noise_jy")[0], sigma_i = qa_values(iquv, "residual_sigma_jy")[0];
  EXPECT_NEAR(noise, 2 * sigma_i, 0.1 * noise);
  for (double reached : qa_values(iquv, "threshold_reached")) EXPECT_EQ(reached, 1.0);
  std::printf("[ measured ] noise only, auto_threshold 3: %.0f components in 40 channels (iquv), %.0f (pol); "
              "search noise %.3g Jy = %.2f sigma_I\n",
              iquv_total, pol_total, noise, noise / sigma_i);
}

// Pixels holding a component in any Stokes plane, per channel, of a run's model cubes.
std::vector<int> model_support(const fs::path& out) {
  std::vector<std::vector<float>> planes;
  for (const char* stokes : {"I", "Q", "U", "V"})
    planes.push_back(spip::fits::read_image((out / ("spip-model-" + std::string(stokes) + ".fits")).string()).data);
  const std::size_t plane = 64 * 64, channels = planes[0].size() / plane;
  std::vector<int> support(channels, 0);
  for (std::size_t c = 0; c < channels; ++c)
    for (std::size_t p = 0; p < plane; ++p)
      support[c] += std::any_of(planes.begin(), planes.end(), [&](const auto& v) { return v[c * plane + p] != 0; });
  return support;
}

// clean.auto_mask: the first stage is a plain auto_mask-sigma CLEAN, whose components
// mark the mask; the second goes down to auto_threshold sigma inside it and nowhere
// else. So the model's support is exactly that of a run stopped at auto_mask sigma,
// with more flux cleaned, while an unmasked run at the same depth cleans the noise.
TEST(SpipCli, AutoMaskCleansDeeperOnlyWhereTheFirstStageFoundSources) {
  const fs::path ms = scratch("noisy.ms");
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + SPIP_TEST_DATA + "/oskar_small.sky.txt --template " +
                oskar_ms + " --out " + ms.string() + " --noise 0.1")
                .exit_code,
            0);
  const auto clean = [&](const std::string& name, const std::string& stop) {
    const Outcome outcome = run_spip("--input.ms " + ms.string() + " --output.dir " + scratch(name).string() +
                                     " --image.size 64 --image.scale 120 --clean.niter 100000 " + stop +
                                     " --faraday.cubes none --parallel.threads 1");
    EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
    return scratch(name);
  };
  const fs::path masked = clean("masked", "--clean.auto_threshold 1 --clean.auto_mask 5");
  const fs::path shallow = clean("shallow", "--clean.auto_threshold 5");
  const fs::path deep = clean("deep", "--clean.auto_threshold 1");
  const std::vector<int> masked_support = model_support(masked), shallow_support = model_support(shallow),
                         deep_support = model_support(deep);
  ASSERT_EQ(masked_support.size(), 40u);
  EXPECT_EQ(masked_support, shallow_support);
  const auto total = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  const double masked_iterations = total(qa_values(masked / "spip-qa.json", "iterations"));
  const double shallow_iterations = total(qa_values(shallow / "spip-qa.json", "iterations"));
  EXPECT_GT(masked_iterations, 1.2 * shallow_iterations);
  const double masked_pixels = std::accumulate(masked_support.begin(), masked_support.end(), 0.0);
  const double deep_pixels = std::accumulate(deep_support.begin(), deep_support.end(), 0.0);
  EXPECT_GT(deep_pixels, 5 * masked_pixels) << "an unmasked 1-sigma CLEAN takes noise peaks all over the image";
  const std::vector<double> noise = qa_values(masked / "spip-qa.json", "search_noise_jy");
  const std::vector<double> threshold = qa_values(masked / "spip-qa.json", "clean_threshold_jy");
  for (std::size_t c = 0; c < noise.size(); ++c) EXPECT_NEAR(threshold[c], noise[c], 1e-6 * noise[c]) << c;
  std::printf("[ measured ] 40 channels: auto_mask 5 + auto_threshold 1: %.0f components on %.0f pixels; "
              "auto_threshold 5: %.0f components; auto_threshold 1 unmasked: %.0f pixels\n",
              masked_iterations, masked_pixels, shallow_iterations, deep_pixels);
}

// WSClean 3.1's components per channel, from its log: the running total it prints at
// the end of each major iteration, taken at the line that closes each channel.
std::vector<double> wsclean_components(const fs::path& log) {
  std::ifstream in(log);
  const std::regex total(R"(Performed (\d+) iterations in total)");
  std::vector<double> per_channel;
  double last = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_search(line, match, total)) last = std::stod(match[1]);
    if (line.find("major iterations were performed") != std::string::npos) per_channel.push_back(last);
  }
  return per_channel;
}

// The same noisy MS, image, weighting, search and stopping rule for both programs:
// spip's automatic threshold compares like with like, so it cleans as deep as WSClean.
TEST(SpipCli, CleansWithinTwiceWscleansComponentsPerChannelOnANoisyMs) {
  if (std::system("command -v wsclean > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "wsclean is not installed (scripts/install-deps.sh installs it)";
  const fs::path ms = scratch("noisy.ms");
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + SPIP_TEST_DATA + "/oskar_small.sky.txt --template " +
                oskar_ms + " --out " + ms.string() + " --noise 0.1")
                .exit_code,
            0);
  const Outcome wsclean =
      run("(cd " + scratch("").string() + " && OPENBLAS_NUM_THREADS=1 wsclean -size 64 64 -scale 120asec -pol IQUV " +
          "-channels-out 40 -use-wgridder -j 1 -no-update-model-required -weight briggs 0 -join-polarizations " +
          "-niter 100000 -mgain 0.8 -gain 0.1 -auto-threshold 3 -name ws " + ms.string() + " > ws.log 2>&1)");
  ASSERT_EQ(wsclean.exit_code, 0) << "see " << scratch("ws.log");
  const Outcome spip = run_spip("--input.ms " + ms.string() + " --output.dir " + scratch("spip").string() +
                                " --image.size 64 --image.scale 120 --image.weighting briggs --image.robust 0" +
                                " --clean.niter 100000 --clean.mgain 0.8 --clean.gain 0.1 --clean.auto_threshold 3" +
                                " --clean.peak iquv --faraday.cubes none --parallel.threads 1");
  ASSERT_EQ(spip.exit_code, 0) << spip.err;
  const std::vector<double> theirs = wsclean_components(scratch("ws.log"));
  const std::vector<double> ours = qa_values(scratch("spip") / "spip-qa.json", "iterations");
  ASSERT_EQ(theirs.size(), 40u);
  ASSERT_EQ(ours.size(), 40u);
  for (std::size_t c = 0; c < ours.size(); ++c) {
    EXPECT_GE(ours[c], 0.5 * theirs[c]) << "channel " << c;
    EXPECT_LE(ours[c], 2.0 * theirs[c]) << "channel " << c;
  }
  const auto total = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  std::printf("[ measured ] components per channel on a noisy MS: spip %.0f, WSClean %.0f (ratio %.2f)\n",
              total(ours) / 40, total(theirs) / 40, total(ours) / total(theirs));
}

// The standard deviation of each 64 x 64 plane of an image.
std::vector<double> plane_sigmas(const std::vector<float>& data) {
  std::vector<double> sigmas;
  for (std::size_t first = 0; first + 64 * 64 <= data.size(); first += 64 * 64) {
    double sum = 0, squares = 0;
    for (std::size_t p = first; p < first + 64 * 64; ++p) {
      sum += data[p];
      squares += static_cast<double>(data[p]) * data[p];
    }
    const double mean = sum / (64 * 64);
    sigmas.push_back(std::sqrt(squares / (64 * 64) - mean * mean));
  }
  return sigmas;
}

// A robustness means what it means in WSClean: on a noise-only MS, spip's Briggs 0 dirty
// images have WSClean's noise, averaged over the 40 channels. Counting densities on the
// image's own uv cells instead of WSClean's padded ones gave 3 % more here (5e7376f).
TEST(SpipCli, BriggsWeightingGivesWscleansNoise) {
  if (std::system("command -v wsclean > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "wsclean is not installed (scripts/install-deps.sh installs it)";
  const fs::path ms = noise_only_ms();
  ASSERT_FALSE(ms.empty());
  const Outcome wsclean =
      run("(cd " + scratch("").string() + " && OPENBLAS_NUM_THREADS=1 wsclean -size 64 64 -scale 120asec -pol I " +
          "-channels-out 40 -use-wgridder -j 1 -no-update-model-required -weight briggs 0 -niter 0 -name ws " +
          ms.string() + " > ws.log 2>&1)");
  ASSERT_EQ(wsclean.exit_code, 0) << "see " << scratch("ws.log");
  const Outcome spip = run_spip("--input.ms " + ms.string() + " --output.dir " + scratch("spip").string() +
                                " --image.size 64 --image.scale 120 --image.weighting briggs --image.robust 0" +
                                " --clean.niter 0 --faraday.cubes none --parallel.threads 1");
  ASSERT_EQ(spip.exit_code, 0) << spip.err;
  const std::vector<double> ours =
      plane_sigmas(spip::fits::read_image((scratch("spip") / "spip-dirty-I.fits").string()).data);
  ASSERT_EQ(ours.size(), 40u);
  double ratio = 0;
  for (std::size_t c = 0; c < ours.size(); ++c) {
    char name[64];
    std::snprintf(name, sizeof name, "ws-%04zu-dirty.fits", c);
    ratio += ours[c] / plane_sigmas(spip::fits::read_image((scratch("") / name).string()).data).at(0) / 40;
  }
  EXPECT_NEAR(ratio, 1.0, 0.015);
  std::printf("[ measured ] Briggs 0 dirty noise, spip / WSClean, mean over 40 channels: %.4f\n", ratio);
}

TEST(SpipCli, AChannelThatCannotReachItsThresholdSaysSo) {
  const std::string small = " --image.size 64 --image.scale 120 --faraday.cubes none";
  const Outcome outcome =
      run_spip(sample_args("capped") + small + " --clean.niter 10000 --clean.threshold 0.001 --clean.max_major 1");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("CLEAN stopped at clean.max_major = 1 before reaching its threshold of 1 mJy"),
            std::string::npos)
      << outcome.out;
  const std::vector<double> reached = qa_values(scratch("capped") / "spip-qa.json", "threshold_reached");
  ASSERT_EQ(reached.size(), 40u);
  for (double r : reached) EXPECT_EQ(r, 0.0);
  const Outcome dirty = run_spip(sample_args("dirty") + small + " --clean.niter 0");
  ASSERT_EQ(dirty.exit_code, 0) << dirty.err;
  // A catalogue of dirty images may list sidelobes, and says so; a cleaned one does not.
  const std::string sidelobes = "warning: with clean.niter 0 the catalogue is found on dirty images";
  EXPECT_NE(dirty.out.find(sidelobes), std::string::npos) << dirty.out;
  EXPECT_EQ(outcome.out.find(sidelobes), std::string::npos) << outcome.out;
  for (double r : qa_values(scratch("dirty") / "spip-qa.json", "threshold_reached")) EXPECT_TRUE(std::isnan(r));
}

TEST(SpipSimulate, WritesAnMsThatSpipReads) {
  const fs::path ms = scratch("sim.ms");
  const Outcome sim = run(std::string(SPIP_SIMULATE_BIN) + " --sky " + data_dir + "/oskar_small.sky.txt --template " +
                          oskar_ms + " --out " + ms.string() + " --flag-fraction 0.5 --seed 3");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const Outcome outcome = run_spip("--input.ms " + ms.string() + " --output.dir " + scratch("out").string() +
                               " --image.size 64 --image.scale 120");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const std::string qa = read_file(scratch("out") / "spip-qa.json");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(qa, match, std::regex(R"("flagged_fraction": ([0-9.]+))")));
  EXPECT_NEAR(std::stod(match[1]), 0.5, 0.02);
}

// A noise sigma below 0 (or NaN) and a flag fraction outside [0, 1] are refused before
// anything is written, not handed to the random distributions.
TEST(SpipSimulate, RefusesNegativeNoiseAndFlagFractionsOutsideZeroToOne) {
  const std::string base = std::string(SPIP_SIMULATE_BIN) + " --sky " + data_dir + "/oskar_small.sky.txt --template " +
                           oskar_ms + " --out " + scratch("corrupt.ms").string();
  for (const auto& [args, says] : {std::pair{" --noise -1", "--noise -1: expected a sigma >= 0 in Jy"},
                                   std::pair{" --noise nan", "--noise nan: expected a sigma >= 0 in Jy"},
                                   std::pair{" --noise inf", "--noise inf: expected a sigma >= 0 in Jy"},
                                   std::pair{" --flag-fraction 1.5", "--flag-fraction 1.5: expected a fraction in [0, 1]"}}) {
    const Outcome outcome = run(base + args);
    EXPECT_EQ(outcome.exit_code, 2) << args;
    EXPECT_NE(outcome.err.find(says), std::string::npos) << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
    EXPECT_FALSE(fs::exists(scratch("corrupt.ms"))) << args;
  }
}

// What no sky or array holds (a declination past the pole, a source more than wholly
// polarised, two stations at one place) is refused in one line (exit 3), and option
// values out of range as usage errors (exit 2); no MS is left.
TEST(SpipSimulate, RefusesUnphysicalSkiesLayoutsAndOptionValues) {
  const fs::path telescope = scratch("sim_tel"), out = scratch("sim.ms");
  fs::create_directories(telescope);
  std::ofstream(telescope / "position.txt") << "149.55 -30.31 237\n";
  std::ofstream(telescope / "layout.txt") << "0 0\n100 0\n0 150\n";
  const auto sky = [&](const std::string& name, const std::string& row) {
    const fs::path file = scratch(name);
    std::ofstream(file) << "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex\n" << row << "\n";
    return file.string();
  };
  const std::string good = sky("good.sky", "\"a\", 150.0, -45.0, 1.0, 0.1, 0.05, 0.0, 1.4e9, 0.0");
  const auto expect_refused = [&](const std::string& args, int code, const std::string& says) {
    const Outcome outcome = run(std::string(SPIP_SIMULATE_BIN) + " --telescope " + telescope.string() + " --out " +
                                out.string() + " --ra 150 --dec -45 " + args);
    EXPECT_EQ(outcome.exit_code, code) << args << ": " << outcome.err;
    EXPECT_NE(outcome.err.find(says), std::string::npos) << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
    EXPECT_FALSE(fs::exists(out)) << args;
  };
  const std::string small = " --channels 2 --times 2";
  expect_refused("--sky " + sky("pole.sky", "\"a\", 150.0, 95.0, 1.0, 0.1, 0.05, 0.0, 1.4e9, 0.0") + small, 3,
                 "DecD = 95.0 is outside [-90, 90]");
  expect_refused("--sky " + sky("over.sky", "\"a\", 150.0, -45.0, 1.0, 1.1, 0.05, 0.0, 1.4e9, 0.0") + small, 3,
                 "a polarised fraction of 1.101 (PolarizedFraction");
  expect_refused("--sky " + good + " --channels 0", 2, "--channels 0: expected at least 1");
  expect_refused("--sky " + good + " --times 0", 2, "--times 0: expected at least 1");
  expect_refused("--sky " + good + small + " --dump 0", 2, "--dump 0: expected a dump time above 0 s");
  expect_refused("--sky " + good + small + " --start garbage", 2, "--start 'garbage'");
  std::ofstream(telescope / "layout.txt") << "0 0\n100 0\n100 0\n";
  expect_refused("--sky " + good + small, 3, "stations 2 and 3 are at the same position");
}

// --beam is refused in one line without its dish or cube, or with a model spip does not have.
TEST(SpipSimulate, RefusesABeamWithoutItsDishInOneLine) {
  const std::string base = std::string(SPIP_SIMULATE_BIN) + " --sky " + data_dir + "/oskar_small.sky.txt --template " +
                           oskar_ms + " --out " + scratch("beam.ms").string();
  for (const auto& [args, says] : {std::pair{" --beam airy", "--beam airy needs --dish-diameter"},
                                   std::pair{" --beam cosine --dish-diameter 25", "--beam cosine: expected gaussian, airy or fits"},
                                   std::pair{" --beam fits", "--beam fits needs --beam-fits"},
                                   std::pair{" --beam airy --dish-diameter 25 --beam-fits b.fits",
                                             "--beam-fits goes with --beam fits, not --beam airy"},
                                   std::pair{" --beam fits --beam-fits nowhere.fits", "beam cube nowhere.fits: no such file"},
                                   std::pair{" --beam airy --dish-diameter 25 --blockage 30", "blockage of 30 m"}}) {
    const Outcome outcome = run(base + args);
    EXPECT_NE(outcome.exit_code, 0) << args;
    EXPECT_NE(outcome.err.find(says), std::string::npos) << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
    EXPECT_FALSE(fs::exists(scratch("beam.ms"))) << args;
  }
}

// One 59 s snapshot of a 6 km east-west array (ATCA's layout) gives a PSF that is a
// line; at 1.5" pixels no beam fits it. Every channel is then restored with its
// theoretical beam 1 / |uv|max, says so in the log and in qa.json, and the common beam is
// the largest of those; image.beam restores with the beam the user gives instead.
TEST(SpipCli, EastWestSnapshotFallsBackToTheTheoreticalBeam) {
  const fs::path telescope = scratch("atca.tm");
  fs::create_directories(telescope);
  std::ofstream(telescope / "position.txt") << "149.5501 -30.3128 236.9\n";
  std::ofstream(telescope / "layout.txt") << "0 0\n30.6 0\n61.2 0\n1591.0 0\n3061.2 0\n6000.0 0\n";
  const fs::path sky = scratch("point.sky.txt");
  std::ofstream(sky) << "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex\n"
                        "\"centre\", 150.0, -45.0, 1.0, 0.1, 0.05, 0.0, 2100000000.0, 0.0\n";
  const fs::path ms = scratch("snapshot.ms");
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + sky.string() + " --telescope " + telescope.string() +
                " --ra 150 --dec -45 --freq-start 2.1e9 --freq-inc 8e6 --channels 4 --times 1 --dump 59 --start "
                "'2025-03-20 12:00:00' --out " + ms.string())
                .exit_code,
            0);
  const std::string args = "--input.ms " + ms.string() + " --image.size 128 --image.scale 1.5 --clean.niter 100"
                           " --parallel.threads 1 --output.dir ";
  const Outcome fitted = run_spip(args + scratch("fitted").string());
  ASSERT_EQ(fitted.exit_code, 0) << fitted.err;
  EXPECT_NE(fitted.out.find("restored with the theoretical beam of the longest baseline"), std::string::npos) << fitted.out;
  const fs::path qa = scratch("fitted") / "spip-qa.json";
  const std::vector<double> theoretical = qa_values(qa, "beam_theoretical"), major = qa_values(qa, "beam_major_arcsec"),
                            minor = qa_values(qa, "beam_minor_arcsec");
  ASSERT_EQ(theoretical.size(), 4u);
  double largest = 0;
  for (std::size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(theoretical[c], 1.0) << "channel " << c;
    // 1 / the longest baseline, read from the MS with casacore (in wavelengths).
    const double longest = spip::test::longest_baseline_wavelengths(ms.string(), static_cast<int>(c));
    EXPECT_NEAR(major[c], 206264.80624709636 / longest, 1e-6 * major[c]) << "channel " << c;
    EXPECT_EQ(major[c], minor[c]);
    largest = std::max(largest, major[c]);
  }
  const auto image = spip::fits::read_image((scratch("fitted") / "spip-image-I.fits").string());
  EXPECT_NEAR(image.number("BMAJ") * 3600, largest, 1e-6 * largest);
  EXPECT_NEAR(qa_values(qa, "major_arcsec").at(0), largest, 1e-6 * largest);

  const Outcome chosen = run_spip(args + scratch("chosen").string() + " --image.beam 20,10,30");
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_EQ(chosen.out.find("theoretical beam"), std::string::npos) << chosen.out;
  const auto chosen_image = spip::fits::read_image((scratch("chosen") / "spip-image-I.fits").string());
  EXPECT_NEAR(chosen_image.number("BMAJ") * 3600, 20.0, 1e-9);
  EXPECT_NEAR(chosen_image.number("BMIN") * 3600, 10.0, 1e-9);
  EXPECT_NEAR(chosen_image.number("BPA"), 30.0, 1e-9);
  for (double c_major : qa_values(scratch("chosen") / "spip-qa.json", "beam_major_arcsec")) EXPECT_EQ(c_major, 20.0);
}

// docs/config.md's option reference is spip --help's output, verbatim.
TEST(SpipCli, ConfigReferenceIsTheHelpText) {
  const std::string doc = read_file(std::string(SPIP_TEST_DATA) + "/../docs/config.md");
  const std::size_t begin = doc.find("```\n"), end = doc.find("```", begin + 4);
  ASSERT_NE(end, std::string::npos) << "docs/config.md has no code block";
  const Outcome help = run_spip("--help");
  ASSERT_EQ(help.exit_code, 0);
  EXPECT_EQ(doc.substr(begin + 4, end - begin - 4), help.out)
      << "regenerate the block in docs/config.md from: spip --help";
}
