// The claim on an output folder and prefix: one holder at a time, a holder that is gone
// recognised on its own host or within its Slurm job, another host's claim cleared
// only when asked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "run_claim.hpp"
#include "scratch.hpp"
#include "spip/error.hpp"

namespace fs = std::filesystem;
using spip::pipeline::RunClaim;

namespace {

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// A process id that no process has now: a child that has exited and been reaped.
long dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

void write_claim(const std::string& dir, const std::string& text) {
  fs::create_directories(dir);
  std::ofstream(RunClaim::path_for(dir, "p")) << text;
}

// The error a second claim gets, or "" when it was granted.
std::string refusal(const std::string& dir, bool break_claim, std::string& cleared) {
  try {
    const RunClaim claim(dir, "p", break_claim, cleared);
    return "";
  } catch (const spip::InputError& e) {
    return e.what();
  }
}

}  // namespace

TEST(RunClaim, SecondClaimIsRefusedNamingTheFolderAndTheHolder) {
  const std::string dir = spip::test::scratch_path("out").string();
  std::string cleared;
  std::optional<RunClaim> first(std::in_place, dir, "p", false, cleared);
  EXPECT_TRUE(fs::exists(first->path()));
  const std::string refused = refusal(dir, false, cleared);
  EXPECT_NE(refused.find(dir + " is in use by another run with prefix p"), std::string::npos) << refused;
  EXPECT_NE(refused.find("process " + std::to_string(getpid()) + " on " + host_name()), std::string::npos) << refused;
  EXPECT_NE(refused.find("--break-claim"), std::string::npos) << refused;
  // Another prefix is another run's.
  EXPECT_NO_THROW(RunClaim(dir, "q", false, cleared));
  first.reset();
  EXPECT_FALSE(fs::exists(RunClaim::path_for(dir, "p"))) << "a released claim is removed";
  EXPECT_EQ(refusal(dir, false, cleared), "");
}

TEST(RunClaim, ClaimOfAGoneProcessOnThisHostIsCleared) {
  const std::string dir = spip::test::scratch_path("out").string();
  const long pid = dead_pid();
  write_claim(dir, "host " + host_name() + "\npid " + std::to_string(pid) + "\nstarted 2026-01-01T00:00:00Z\n");
  std::string cleared;
  EXPECT_EQ(refusal(dir, false, cleared), "");
  EXPECT_NE(cleared.find("process " + std::to_string(pid)), std::string::npos) << cleared;
  EXPECT_NE(cleared.find("which is gone"), std::string::npos) << cleared;
  // A zombie (a killed rank not yet reaped: it answers kill(pid, 0)) is gone, although
  // its name is still this binary's.
  const pid_t zombie = fork();
  if (zombie == 0) _exit(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  write_claim(dir, "host " + host_name() + "\npid " + std::to_string(zombie) + "\nstarted 2026-01-01T00:00:00Z\n");
  EXPECT_EQ(refusal(dir, false, cleared), "");
  waitpid(zombie, nullptr, 0);
  // A pid now used by another program (not this test binary) is gone too.
  write_claim(dir, "host " + host_name() + "\npid 1\nstarted 2026-01-01T00:00:00Z\n");
  EXPECT_EQ(refusal(dir, false, cleared), "");
}

TEST(RunClaim, ClaimOfALiveProcessOnThisHostHolds) {
  const std::string dir = spip::test::scratch_path("out").string();
  write_claim(dir, "host " + host_name() + "\npid " + std::to_string(getpid()) + "\nstarted 2026-01-01T00:00:00Z\n");
  std::string cleared;
  EXPECT_NE(refusal(dir, false, cleared), "");
  EXPECT_TRUE(fs::exists(RunClaim::path_for(dir, "p")));
}

TEST(RunClaim, AnotherHostsClaimIsClearedOnlyWhenAsked) {
  const std::string dir = spip::test::scratch_path("out").string();
  write_claim(dir, "host node-that-is-not-this-one\npid 12\nstarted 2026-01-01T00:00:00Z\n");
  std::string cleared;
  const std::string refused = refusal(dir, false, cleared);
  EXPECT_NE(refused.find("process 12 on node-that-is-not-this-one, started 2026-01-01T00:00:00Z"), std::string::npos)
      << refused;
  EXPECT_EQ(refusal(dir, true, cleared), "");
  EXPECT_NE(cleared.find("--break-claim"), std::string::npos) << cleared;
}

TEST(RunClaim, AnEarlierStartOfThisSlurmJobIsCleared) {
  const std::string dir = spip::test::scratch_path("out").string();
  write_claim(dir, "host other-node\npid 12\nstarted 2026-01-01T00:00:00Z\nslurm_job 4242\n");
  std::string cleared;
  setenv("SLURM_JOB_ID", "4243", 1);
  EXPECT_NE(refusal(dir, false, cleared), "") << "another Slurm job's claim holds";
  setenv("SLURM_JOB_ID", "4242", 1);
  EXPECT_EQ(refusal(dir, false, cleared), "");
  EXPECT_NE(cleared.find("Slurm job 4242"), std::string::npos) << cleared;
  unsetenv("SLURM_JOB_ID");
}

TEST(RunClaim, AnUnwritableFolderSaysWhy) {
  std::string cleared;
  const std::string refused = refusal("/proc/spip-cannot-be-here", false, cleared);
  EXPECT_NE(refused.find("/proc/spip-cannot-be-here"), std::string::npos) << refused;
  EXPECT_NE(refused.find("cannot create the output folder"), std::string::npos) << refused;
}
