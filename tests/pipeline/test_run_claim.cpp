// The claim on an output folder and prefix: one holder at a time; a holder that is gone
// recognised on its own host or as an earlier start of its Slurm job; another host's
// claim cleared only when asked. And the text writes every product folder gets first.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "scratch.hpp"
#include "spip/error.hpp"
#include "spip/job/product_registry.hpp"
#include "spip/job/run_claim.hpp"
#include "spip/job/text_file.hpp"

namespace fs = std::filesystem;
using spip::pipeline::RunClaim;

namespace {

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Field 22 of /proc/PID/stat, the process's start after boot.
std::string process_start(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string field;
  for (int k = 3; k <= 22; ++k) fields >> field;
  return field;
}

std::string claim_of(const std::string& host, long pid, const std::string& start, const std::string& more = "") {
  return "host " + host + "\npid " + std::to_string(pid) + "\nprocess_start " + start +
         "\nstarted 2026-01-01T00:00:00Z\n" + more;
}

// Where a run with output.dir `dir` and output.prefix `prefix` claims its folder.
std::string claim_path(const std::string& dir, const std::string& prefix = "p") {
  spip::Config config;
  config.output.dir = dir;
  config.output.prefix = prefix;
  return spip::pipeline::ProductRegistry(config, {}).claim();
}

void write_claim(const std::string& dir, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(claim_path(dir)) << text;
}

// The error a claim gets, or "" when it was granted (and released again).
std::string refusal(const std::string& dir, bool break_claim, std::string& cleared) {
  try {
    const RunClaim claim(claim_path(dir), "p", break_claim, cleared);
    return "";
  } catch (const spip::InputError& e) {
    return e.what();
  }
}

}  // namespace

TEST(RunClaim, SecondClaimIsRefusedNamingTheFolderAndTheHolder) {
  const std::string dir = spip::test::scratch_path("out").string();
  std::string cleared;
  std::optional<RunClaim> first(std::in_place, claim_path(dir), "p", false, cleared);
  EXPECT_TRUE(fs::exists(first->path()));
  const std::string refused = refusal(dir, false, cleared);
  EXPECT_NE(refused.find(dir + " is in use by another run with prefix p"), std::string::npos) << refused;
  EXPECT_NE(refused.find("process " + std::to_string(getpid()) + " on " + host_name()), std::string::npos) << refused;
  EXPECT_NE(refused.find("--break-claim"), std::string::npos) << refused;
  // Another prefix is another run's.
  EXPECT_NO_THROW(RunClaim(claim_path(dir, "q"), "q", false, cleared));
  first.reset();
  EXPECT_FALSE(fs::exists(claim_path(dir))) << "a released claim is removed";
  EXPECT_EQ(refusal(dir, false, cleared), "");
}

TEST(RunClaim, AFolderTheClaimMadeGoesWithItIfNothingWasWritten) {
  const std::string dir = (spip::test::scratch_dir() / "new").string();
  std::string cleared;
  { const RunClaim claim(claim_path(dir), "p", false, cleared); }
  EXPECT_FALSE(fs::exists(dir));
  {
    const RunClaim claim(claim_path(dir), "p", false, cleared);
    std::ofstream(dir + "/product") << "x";
  }
  EXPECT_TRUE(fs::exists(dir + "/product"));
}

TEST(RunClaim, ClaimOfAGoneProcessOnThisHostIsCleared) {
  const std::string dir = spip::test::scratch_path("out").string();
  std::string cleared;
  // A process that has ended and been reaped.
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  const std::string ended_start = process_start(ended);
  waitpid(ended, nullptr, 0);
  write_claim(dir, claim_of(host_name(), ended, ended_start));
  EXPECT_EQ(refusal(dir, false, cleared), "");
  EXPECT_NE(cleared.find("process " + std::to_string(ended)), std::string::npos) << cleared;
  EXPECT_NE(cleared.find("which is gone"), std::string::npos) << cleared;
  // A zombie: a killed rank not yet reaped, which still answers kill(pid, 0).
  const pid_t zombie = fork();
  if (zombie == 0) _exit(0);
  const std::string zombie_start = process_start(zombie);
  siginfo_t info{};
  waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT);
  write_claim(dir, claim_of(host_name(), zombie, zombie_start));
  EXPECT_EQ(refusal(dir, false, cleared), "");
  waitpid(zombie, nullptr, 0);
  // A live process with another start time: the pid was reused.
  write_claim(dir, claim_of(host_name(), getpid(), "1"));
  EXPECT_EQ(refusal(dir, false, cleared), "");
}

TEST(RunClaim, ClaimOfALiveProcessOnThisHostHolds) {
  const std::string dir = spip::test::scratch_path("out").string();
  write_claim(dir, claim_of(host_name(), getpid(), process_start(getpid())));
  std::string cleared;
  EXPECT_NE(refusal(dir, false, cleared), "");
  EXPECT_TRUE(fs::exists(claim_path(dir)));
}

// A run killed between creating its claim and writing its name leaves an empty file:
// a starting run's for ten minutes, stale after.
TEST(RunClaim, AnEmptyClaimIsStaleAfterTenMinutes) {
  const std::string dir = spip::test::scratch_path("out").string();
  write_claim(dir, "");
  std::string cleared;
  const std::string refused = refusal(dir, false, cleared);
  EXPECT_NE(refused.find("a run that is starting"), std::string::npos) << refused;
  fs::last_write_time(claim_path(dir), fs::file_time_type::clock::now() - std::chrono::minutes(11));
  EXPECT_EQ(refusal(dir, false, cleared), "");
  EXPECT_NE(cleared.find("killed while making it"), std::string::npos) << cleared;
}

TEST(RunClaim, AnotherHostsClaimIsClearedOnlyWhenAsked) {
  const std::string dir = spip::test::scratch_path("out").string();
  write_claim(dir, claim_of("node-that-is-not-this-one", 12, "100"));
  std::string cleared;
  const std::string refused = refusal(dir, false, cleared);
  EXPECT_NE(refused.find("process 12 on node-that-is-not-this-one, started 2026-01-01T00:00:00Z"), std::string::npos)
      << refused;
  EXPECT_EQ(refusal(dir, true, cleared), "");
  EXPECT_NE(cleared.find("--break-claim"), std::string::npos) << cleared;
}

// Slurm runs a job once at a time, and counts its requeues: a claim of an earlier start
// of this job is stale wherever it ran; one of this start (another step of the same
// allocation) or of another job holds.
TEST(RunClaim, OnlyAnEarlierStartOfThisSlurmJobIsCleared) {
  const std::string dir = spip::test::scratch_path("out").string();
  write_claim(dir, claim_of("other-node", 12, "100", "slurm_job 4242\nslurm_restart 0\n"));
  std::string cleared;
  setenv("SLURM_JOB_ID", "4243", 1);
  setenv("SLURM_RESTART_COUNT", "1", 1);
  EXPECT_NE(refusal(dir, false, cleared), "") << "another Slurm job's claim holds";
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_RESTART_COUNT", "0", 1);
  EXPECT_NE(refusal(dir, false, cleared), "") << "the same start of this job holds";
  setenv("SLURM_RESTART_COUNT", "1", 1);
  EXPECT_EQ(refusal(dir, false, cleared), "");
  EXPECT_NE(cleared.find("Slurm job 4242"), std::string::npos) << cleared;
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_RESTART_COUNT");
}

TEST(RunClaim, AnUnwritableFolderSaysWhy) {
  std::string cleared;
  const std::string refused = refusal("/proc/spip-cannot-be-here", false, cleared);
  EXPECT_NE(refused.find("/proc/spip-cannot-be-here: cannot create the output folder"), std::string::npos) << refused;
}

// A text product that cannot be written says why (exit 3: unusable output) and leaves
// no partial file.
TEST(TextProducts, AFailedWriteSaysWhyAndLeavesNothing) {
  try {
    spip::pipeline::write_text_atomically("/proc/self/spip-test.txt", "x");
    FAIL() << "writing into /proc succeeded";
  } catch (const spip::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/self/spip-test.txt.partial: cannot write: "), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists("/proc/self/spip-test.txt.partial"));
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full to fill";
  const fs::path full = spip::test::scratch_path("full.txt");
  fs::create_symlink("/dev/full", full.string() + ".partial");
  try {
    spip::pipeline::write_text_atomically(full.string(), std::string(1 << 16, 'x'));
    FAIL() << "writing to /dev/full succeeded";
  } catch (const spip::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(full)) << "a failed write may not look complete";
}
