// Kill a 2-rank run after a few channels or while it restores them with the common
// beam, signal one of its ranks, or fill its disk; start it again with the same
// command, and compare every product with an uninterrupted run's, bit for bit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "ms_edit.hpp"
#include "sample_pointing.hpp"
#include "spip/fits/fits_image.hpp"
#include "scratch.hpp"
#include "split_ms.hpp"

namespace fs = std::filesystem;

namespace {

// Open MPI's session folder goes into the test's own folder too: a killed mpiexec
// leaves it behind. Each channel is marked as soon as it is written, so that a test can
// stop the run after a given number of channels.
std::string command_for(const std::string& out, const std::string& ms = std::string(SPIP_TEST_DATA) + "/oskar_small.ms") {
  return "TMPDIR=" + spip::test::scratch_dir().string() + " " + SPIP_MPIEXEC + " 2 " + SPIP_BIN + " --config " +
         SPIP_DEMO_CONFIG + " --input.ms " + ms + " --output.dir " + out +
         " --image.size 256 --image.scale 20 --faraday.dphi 1 --parallel.threads 1 --output.checkpoint_interval 0";
}

// Channels marked imaged (`kind` "record") or restored with the common beam
// ("restored_peak") in the journals of the run writing to `out`: whole lines only.
int count_markers(const std::string& out, const std::string& kind = "record") {
  const fs::path dir = fs::path(out) / ".demo.progress";
  std::set<int> channels;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() != ".jsonl") continue;
    std::ifstream in(it->path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::regex marker("\\{\"channel\":(\\d+),\"" + kind + "\":[^\\n]*\\n");
    for (auto m = std::sregex_iterator(text.begin(), text.end(), marker); m != std::sregex_iterator(); ++m)
      channels.insert(std::stoi((*m)[1]));
  }
  return static_cast<int>(channels.size());
}

// Processes of session `sid`. Open MPI starts each rank in a process group of its own,
// so a signal to mpiexec's group would leave the ranks running; a node failure or a
// Slurm time limit (which kills the job's cgroup) takes them all, as this does.
std::vector<pid_t> session_members(pid_t sid) {
  std::vector<pid_t> members;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // Fields after the parenthesised command: state ppid pgrp session ...
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    char state = 0;
    long ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    if (session == sid && state != 'Z') members.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return members;
}

void kill_session(pid_t sid) {
  for (int round = 0; round < 500; ++round) {
    const std::vector<pid_t> members = session_members(sid);
    if (members.empty()) return;
    for (pid_t pid : members) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts `command` (output to `log`) in a session of its own, so that every process of
// it (mpiexec and the ranks) can be found and killed at once.
pid_t start_in_own_session(const std::string& command, const std::string& log) {
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    const std::string line = command + " > " + log + " 2>&1";
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return child;
}

// Waits (at most 300 s) until `count` channels of the run writing to `out` are done
// (or restored, with `kind` "restored_peak").
void wait_for_markers(const std::string& out, int count, const std::string& kind = "record") {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (count_markers(out, kind) < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

// The channels the ranks of a run staged for imaging, from each rank's "N channel(s) staged".
int channels_staged(const std::string& log) {
  int staged = 0, ranks = 0;
  const std::string phrase = " channel(s) staged";
  for (std::size_t at = log.find(phrase); at != std::string::npos; at = log.find(phrase, at + 1), ++ranks)
    staged += std::stoi(log.substr(log.rfind(' ', at - 1) + 1));
  EXPECT_EQ(ranks, 2) << log;
  return staged;
}

// What each rank of a run stopped in the Faraday stage said of how far it got:
// ", N of this rank's M rows were done, in T s" for each.
std::string rows_done(const std::string& log) {
  std::string said;
  const std::string phrase = " rows were done, in ";
  for (std::size_t at = log.find(phrase); at != std::string::npos; at = log.find(phrase, at + 1)) {
    const std::size_t from = log.rfind('(', at) + 1;
    said += ", " + log.substr(from, log.find(')', at) - from);
  }
  return said;
}

// Starts the run writing to `out` (output to `log`) in a session of its own, waits for
// `count` markers (of `kind`) and kills every process of it at once.
void kill_after_markers(const std::string& out, int count, const std::string& kind, const std::string& log,
                        const std::string& command = "") {
  const pid_t child = start_in_own_session(command.empty() ? command_for(out) : command, log);
  ASSERT_GE(child, 0);
  wait_for_markers(out, count, kind);
  kill_session(child);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(session_members(child).empty()) << "a process of the killed run survived";
}

// Every FITS product of `reference` is in `other` with the same pixels, bit for bit,
// and the same restoring beam.
int expect_identical_products(const std::string& reference, const std::string& other) {
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(reference)) {
    if (entry.path().extension() != ".fits") continue;
    const auto a = spip::fits::read_image(entry.path().string());
    const auto b = spip::fits::read_image((fs::path(other) / entry.path().filename()).string());
    for (const char* key : {"BMAJ", "BMIN", "BPA"}) {
      EXPECT_EQ(a.keywords.count(key), b.keywords.count(key)) << entry.path().filename() << " " << key;
      if (a.keywords.count(key) && b.keywords.count(key)) {
        EXPECT_EQ(a.keywords.at(key), b.keywords.at(key)) << entry.path().filename() << " " << key;
      }
    }
    EXPECT_EQ(a.data.size(), b.data.size()) << entry.path().filename();
    if (a.data.size() != b.data.size()) continue;
    EXPECT_EQ(0, std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float))) << entry.path().filename();
    ++compared;
  }
  return compared;
}

// Ranks of the run in session `sid`: the members that run spip itself, not mpiexec.
std::vector<pid_t> spip_ranks(pid_t sid) {
  std::vector<pid_t> ranks;
  for (pid_t pid : session_members(sid)) {
    const std::string cmdline = read_file(fs::path("/proc") / std::to_string(pid) / "cmdline");
    if (cmdline.rfind(SPIP_BIN, 0) == 0) ranks.push_back(pid);
  }
  return ranks;
}

// An empty folder of this name in the test's scratch folder.
std::string fresh_dir(const std::string& name) {
  const fs::path dir = spip::test::scratch_dir() / name;
  fs::create_directories(dir);
  return dir.string();
}

// The products of one uninterrupted run, made once for every test of this binary.
std::string reference_products() {
  static const std::string reference = [] {
    const std::string dir = fresh_dir("reference");
    const std::string out = dir + "/products";
    if (std::system((command_for(out) + " > " + dir + "/reference.log 2>&1").c_str()) != 0) return std::string();
    return out;
  }();
  return reference;
}

// Sends SIGTERM to the second rank of the run in session `child`, what Slurm does at the
// time limit, and returns the run's exit code.
int terminate_second_rank(pid_t child) {
  const std::vector<pid_t> ranks = spip_ranks(child);
  EXPECT_EQ(ranks.size(), 2u);
  if (!ranks.empty()) kill(ranks.back(), SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts `command` and stops it so once `count` channels are done.
int stop_after_markers(const std::string& command, const std::string& out, int count, const std::string& log) {
  const pid_t child = start_in_own_session(command, log);
  wait_for_markers(out, count);
  return terminate_second_rank(child);
}

// Channels imaged by the run logging to `log` so far: each logs its progress once.
int channels_imaged(const std::string& log) {
  int imaged = 0;
  const std::string phrase = " (job: 40 channels)";
  for (std::size_t at = log.find(phrase); at != std::string::npos; at = log.find(phrase, at + 1)) ++imaged;
  return imaged;
}

// Starts `command` in a session of its own and waits (at most 300 s) until it has
// imaged `count` channels; returns the session.
pid_t start_and_wait_for_channels(const std::string& command, const std::string& log, int count) {
  const pid_t child = start_in_own_session(command, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (channels_imaged(read_file(log)) < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return child;
}

// "restored_peak_i_jy" of every channel record of a qa.json, in channel order.
std::vector<double> restored_peaks(const std::string& qa) {
  const std::string text = read_file(qa);
  std::vector<double> peaks;
  const std::string key = "\"restored_peak_i_jy\": ";
  for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1))
    peaks.push_back(std::stod(text.substr(at + key.size())));
  return peaks;
}

// A small file system of its own, unmounted when the test ends however it ends.
struct SmallFileSystem {
  std::string dir;
  bool mounted = false;
  SmallFileSystem(const std::string& path, const std::string& size) : dir(path) {
    fs::create_directories(dir);
    mounted = mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallFileSystem() {
    if (mounted) umount2(dir.c_str(), MNT_DETACH);
  }
};

}  // namespace

TEST(Resume, RunThatFillsTheDiskLeavesNothingFinalAndResumes) {
  const std::string base = fresh_dir("disk_full");
  const SmallFileSystem disk(base + "/disk", "450m");  // the products need ~375 MB
  if (!disk.mounted) GTEST_SKIP() << "cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)";
  const std::string reference = reference_products();
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";

  // Once a few channels are done, something else takes the rest of the space.
  const std::string out = disk.dir + "/out";
  const pid_t child = start_in_own_session(command_for(out), base + "/full.log");
  ASSERT_GE(child, 0);
  wait_for_markers(out, 3);
  const int markers_at_fill = count_markers(out);
  const std::string filler = disk.dir + "/filler";
  {
    std::ofstream fill(filler, std::ios::binary);
    const std::vector<char> block(1 << 20, 1);
    while (fill.write(block.data(), static_cast<std::streamsize>(block.size())) && fill.flush()) {
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << read_file(base + "/full.log");
  EXPECT_NE(read_file(base + "/full.log").find("error:"), std::string::npos) << "the failure must be reported";
  // Besides partial files and markers, only the run's configuration, written whole at its start.
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    // The claim stays where another rank's failure aborted rank 0; the next start clears it.
    EXPECT_TRUE(name.ends_with(".partial") || name == ".demo.progress" || name == "demo-config.ini" ||
                name == ".demo.claim")
        << name << " looks complete after a full disk";
  }

  fs::remove(filler);
  ASSERT_EQ(std::system((command_for(out) + " > " + base + "/resumed.log 2>&1").c_str()), 0)
      << read_file(base + "/resumed.log");
  EXPECT_NE(read_file(base + "/resumed.log").find("resuming:"), std::string::npos);
  const int compared = expect_identical_products(reference, out);
  EXPECT_GE(compared, 50);
  std::cout << "[ measured ] disk filled after " << markers_at_fill << " channels: the run failed leaving only "
            << "partial files; resumed, " << compared << " FITS products identical to an uninterrupted run\n";
  fs::remove_all(out);
}

TEST(Resume, KilledRunFinishesWithIdenticalProducts) {
  const std::string base = fresh_dir("spip_resume");
  const std::string reference = reference_products(), resumed = base + "/resumed";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";

  ASSERT_NO_FATAL_FAILURE(kill_after_markers(resumed, 6, "record", base + "/killed.log"));
  // What is at stake: nothing of the killed run may go on writing.
  const int markers_at_kill = count_markers(resumed);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_EQ(count_markers(resumed), markers_at_kill) << "the killed run is still writing";
  EXPECT_EQ(count_markers(resumed, "restored_peak"), 0) << "restored before every channel had its beam";
  const int done_when_killed = count_markers(resumed);
  ASSERT_GE(done_when_killed, 6);
  ASSERT_LT(done_when_killed, 40) << "the run finished before it could be killed";
  ASSERT_FALSE(fs::exists(resumed + "/demo-qa.json"));
  ASSERT_FALSE(fs::exists(resumed + "/demo-image-I.fits")) << "nothing may look complete after a kill";

  ASSERT_EQ(std::system((command_for(resumed) + " > " + base + "/resumed.log 2>&1").c_str()), 0);
  EXPECT_NE(read_file(base + "/resumed.log").find("resuming:"), std::string::npos);
  EXPECT_EQ(read_file(base + "/resumed.log").find("fewer than 3"), std::string::npos) << "20\" pixels sample the beam";
  EXPECT_FALSE(fs::exists(resumed + "/.demo.progress"));

  const int compared = expect_identical_products(reference, resumed);
  EXPECT_GE(compared, 50);
  std::cout << "[ measured ] killed after " << done_when_killed << " of 40 channels; " << compared
            << " FITS products identical to the uninterrupted run\n";
}

// With a checkpoint interval longer than the run, markers wait for the end of the
// imaging: a run killed before then has marked nothing, and its channels are all
// imaged again; one stopped by SIGTERM syncs its cubes and marks every channel it
// imaged before it leaves, and those are not imaged again.
TEST(Resume, MarkersWaitForTheNextCheckpoint) {
  const std::string base = fresh_dir("spip_resume_checkpoint");
  const std::string reference = reference_products(), killed = base + "/killed", stopped = base + "/stopped";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";
  const auto command = [](const std::string& out) {
    std::string line = command_for(out);
    line.replace(line.find("--output.checkpoint_interval 0"), 30, "--output.checkpoint_interval 1000");
    return line;
  };

  const pid_t child = start_and_wait_for_channels(command(killed), base + "/killed.log", 8);
  kill_session(child);
  waitpid(child, nullptr, 0);
  const int imaged_when_killed = channels_imaged(read_file(base + "/killed.log"));
  ASSERT_GE(imaged_when_killed, 8);
  ASSERT_LT(imaged_when_killed, 40) << "the run finished before it could be killed";
  EXPECT_EQ(count_markers(killed), 0) << "a marker was written before the first checkpoint";
  ASSERT_EQ(std::system((command(killed) + " > " + base + "/after-kill.log 2>&1").c_str()), 0);
  EXPECT_EQ(channels_staged(read_file(base + "/after-kill.log")), 40);
  EXPECT_GE(expect_identical_products(reference, killed), 50);

  const int code = terminate_second_rank(start_and_wait_for_channels(command(stopped), base + "/stopped.log", 8));
  const std::string log = read_file(base + "/stopped.log");
  ASSERT_EQ(code, 75) << log;
  const int imaged_when_stopped = channels_imaged(log);
  ASSERT_LT(imaged_when_stopped, 40) << "the run finished before it could be stopped";
  EXPECT_EQ(count_markers(stopped), imaged_when_stopped) << log;
  ASSERT_EQ(std::system((command(stopped) + " > " + base + "/after-stop.log 2>&1").c_str()), 0);
  EXPECT_EQ(channels_staged(read_file(base + "/after-stop.log")), 40 - imaged_when_stopped);
  EXPECT_GE(expect_identical_products(reference, stopped), 50);
  std::cout << "[ measured ] killed after imaging " << imaged_when_killed << " of 40 channels before a checkpoint: "
            << "no markers, all imaged again; stopped after " << imaged_when_stopped << ": as many markers\n";
  fs::remove_all(base);
}

// The sample as four MSs of 10 channels given in shuffled order (issue 29): a rank's
// channels come from two of them, and a killed run resumes to the single MS's products,
// bit for bit.
TEST(Resume, KilledRunOfSeveralMeasurementSetsFinishesWithIdenticalProducts) {
  const std::string base = fresh_dir("spip_resume_split");
  const std::string reference = reference_products(), resumed = base + "/resumed";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";
  std::string inputs;
  for (const std::string& ms : spip::test::split_ms(SPIP_SIMULATE_BIN, std::string(SPIP_TEST_DATA) + "/oskar_small.ms",
                                                    {"30-39", "0-9", "20-29", "10-19"}, "part"))
    inputs += (inputs.empty() ? "" : " --input.ms ") + ms;
  const std::string command = command_for(resumed, inputs);
  ASSERT_NO_FATAL_FAILURE(kill_after_markers(resumed, 6, "record", base + "/killed.log", command));
  const int done_when_killed = count_markers(resumed);
  ASSERT_LT(done_when_killed, 40) << "the run finished before it could be killed";
  ASSERT_EQ(std::system((command + " > " + base + "/resumed.log 2>&1").c_str()), 0);
  EXPECT_NE(read_file(base + "/resumed.log").find("resuming:"), std::string::npos);
  const int compared = expect_identical_products(reference, resumed);
  EXPECT_GE(compared, 50);
  std::cout << "[ measured ] 4 MSs killed after " << done_when_killed << " of 40 channels; " << compared
            << " FITS products identical to the single MS's uninterrupted run\n";
}

// Killed after every channel is imaged, while (or after) the channels are restored with
// the common beam: the resumed run images nothing again and restores only the
// channels without a restored marker. The window before the products are final is the
// Faraday stage's 0.5 s here, hence the fine polling.
TEST(Resume, KilledWhileRestoringRestoresOnlyWhatIsLeft) {
  const std::string base = fresh_dir("spip_resume_restore");
  const std::string reference = reference_products(), resumed = base + "/resumed";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";

  ASSERT_NO_FATAL_FAILURE(kill_after_markers(resumed, 4, "restored_peak", base + "/killed.log"));
  const int restored_at_kill = count_markers(resumed, "restored_peak");
  ASSERT_GE(restored_at_kill, 4);
  ASSERT_EQ(count_markers(resumed), 40) << "restoring began before every channel was imaged";
  ASSERT_FALSE(fs::exists(resumed + "/demo-image-I.fits")) << "nothing may look complete after a kill";

  ASSERT_EQ(std::system((command_for(resumed) + " > " + base + "/resumed.log 2>&1").c_str()), 0);
  const std::string log = read_file(base + "/resumed.log");
  EXPECT_NE(log.find("resuming: 20 of this rank's 20 channels are complete"), std::string::npos) << log;
  // Each channel is staged once per run: 40 in the uninterrupted run, none here.
  EXPECT_EQ(channels_staged(read_file(fs::path(reference).parent_path() / "reference.log")), 40);
  EXPECT_EQ(channels_staged(log), 0) << log;
  // Each rank logs "restored N channels with the common beam ...".
  int restored_again = 0;
  const std::string phrase = "] restored ";
  for (std::size_t at = log.find(phrase); at != std::string::npos; at = log.find(phrase, at + 1))
    restored_again += std::stoi(log.substr(at + phrase.size()));
  EXPECT_EQ(restored_again, 40 - restored_at_kill) << log;
  const int compared = expect_identical_products(reference, resumed);
  EXPECT_GE(compared, 50);
  std::cout << "[ measured ] killed with " << restored_at_kill << " of 40 channels restored; the resumed run restored "
            << restored_again << " and its " << compared << " FITS products equal the uninterrupted run's\n";
  fs::remove_all(base);
}

// What Slurm does at the time limit, to one rank only: that rank finishes its channel
// and tells the others, and all leave together with the resumable exit code.
TEST(Resume, SignalledRankStopsEveryRankWithTheResumableExitCode) {
  const std::string base = fresh_dir("spip_resume_signal");
  const std::string reference = reference_products(), stopped = base + "/stopped";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";

  const pid_t child = start_in_own_session(command_for(stopped), base + "/stopped.log");
  ASSERT_GE(child, 0);
  wait_for_markers(stopped, 4);
  const std::vector<pid_t> ranks = spip_ranks(child);
  ASSERT_EQ(ranks.size(), 2u);
  kill(ranks.back(), SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  const std::string log = read_file(base + "/stopped.log");
  ASSERT_TRUE(WIFEXITED(status)) << log;
  EXPECT_EQ(WEXITSTATUS(status), 75) << log;
  EXPECT_NE(log.find("received SIGTERM"), std::string::npos) << log;
  EXPECT_NE(log.find("another rank was asked to stop"), std::string::npos) << log;
  const int done_when_stopped = count_markers(stopped);
  ASSERT_GE(done_when_stopped, 4);
  ASSERT_LT(done_when_stopped, 40) << "the run finished before it could be stopped";
  ASSERT_FALSE(fs::exists(stopped + "/demo-image-I.fits")) << "nothing may look complete after a stop";
  EXPECT_FALSE(fs::exists(stopped + "/.demo.claim")) << "a stopped run releases its claim";

  ASSERT_EQ(std::system((command_for(stopped) + " > " + base + "/resumed.log 2>&1").c_str()), 0);
  EXPECT_NE(read_file(base + "/resumed.log").find("resuming:"), std::string::npos);
  const int compared = expect_identical_products(reference, stopped);
  EXPECT_GE(compared, 50);
  std::cout << "[ measured ] stopped by SIGTERM to one rank after " << done_when_stopped << " of 40 channels; "
            << compared << " FITS products identical to the uninterrupted run\n";
  fs::remove_all(base);
}

// Stopped inside the Faraday stage (SIGTERM to one rank once the stage has begun; small
// row groups and kept planes spilled to scratch make it long enough to catch): every
// rank leaves at the next row group with the resumable exit code and nothing of the
// stage final; the resumed run images nothing again, makes the stage again from the
// kept planes it reads back, and its products equal the uninterrupted run's.
TEST(Resume, StoppedInTheFaradayStageResumesToIdenticalProducts) {
  const std::string base = fresh_dir("spip_resume_faraday");
  const std::string reference = reference_products(), stopped = base + "/stopped";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";
  const std::string command = command_for(stopped) + " --parallel.memory_gb 0.12 --parallel.scratch " + base + "/kept";
  const std::string log_path = base + "/stopped.log";
  const pid_t child = start_in_own_session(command, log_path);
  ASSERT_GE(child, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (read_file(log_path).find("RM synthesis:") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const std::vector<pid_t> ranks = spip_ranks(child);
  ASSERT_EQ(ranks.size(), 2u);
  kill(ranks.back(), SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  const std::string log = read_file(log_path);
  ASSERT_TRUE(WIFEXITED(status)) << log;
  ASSERT_EQ(WEXITSTATUS(status), 75) << "the stage ended before the stop reached it:\n" << log;
  EXPECT_NE(log.find("the Faraday products are left partial"), std::string::npos) << log;
  EXPECT_NE(log.find(" rows were done, in "), std::string::npos) << "each rank says how far it got: " << log;
  EXPECT_EQ(count_markers(stopped), 40);
  EXPECT_FALSE(fs::exists(stopped + "/demo-peak-phi.fits")) << "nothing of the stage may look complete";

  ASSERT_EQ(std::system((command + " > " + base + "/resumed.log 2>&1").c_str()), 0);
  const std::string resumed = read_file(base + "/resumed.log");
  EXPECT_NE(resumed.find("resuming: 20 of this rank's 20 channels are complete"), std::string::npos) << resumed;
  EXPECT_EQ(channels_staged(resumed), 0) << resumed;
  const int compared = expect_identical_products(reference, stopped);
  EXPECT_GE(compared, 50);
  // How far the ranks got shows the margin the stop had: a stop that lands ever later
  // would fail this test as flaky, and shows here first.
  std::cout << "[ measured ] stopped in the Faraday stage" << rows_done(log) << "; the resumed run's " << compared
            << " FITS products equal the uninterrupted run's\n";
  fs::remove_all(base);
}

// With output.channel_cubes = none a stopped run leaves no planes on shared storage
// (a requeued job may land on other nodes, whose scratch it cannot see): the resumed
// run images the channels the stopped one finished again, says so, and makes the same
// Faraday products as an uninterrupted run that wrote every cube.
TEST(Resume, WithoutChannelCubesTheFinishedChannelsAreImagedAgain) {
  const std::string base = fresh_dir("spip_resume_no_cubes");
  const std::string reference = reference_products(), stopped = base + "/stopped";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";
  const std::string command = command_for(stopped) + " --output.channel_cubes none";
  ASSERT_EQ(stop_after_markers(command, stopped, 4, base + "/stopped.log"), 75) << read_file(base + "/stopped.log");
  const int done_when_stopped = count_markers(stopped);
  ASSERT_GE(done_when_stopped, 4);
  ASSERT_LT(done_when_stopped, 40) << "the run finished before it could be stopped";

  ASSERT_EQ(std::system((command + " > " + base + "/resumed.log 2>&1").c_str()), 0);
  const std::string log = read_file(base + "/resumed.log");
  int imaged_again = 0;
  const std::string phrase = "resuming: ";
  for (std::size_t at = log.find(phrase); at != std::string::npos; at = log.find(phrase, at + 1))
    if (log.compare(log.find(' ', at + phrase.size()), 44, " channel(s) an earlier run finished are imag") == 0)
      imaged_again += std::stoi(log.substr(at + phrase.size()));
  EXPECT_EQ(imaged_again, done_when_stopped) << log;
  EXPECT_EQ(channels_staged(log), 40) << log;
  // Every product of this run (none is a channel cube) equals the reference's.
  const int compared = expect_identical_products(stopped, reference);
  EXPECT_GE(compared, 35);
  std::cout << "[ measured ] without channel cubes, stopped after " << done_when_stopped
            << " of 40 channels; the resumed run imaged them again, and its " << compared
            << " FITS products equal the uninterrupted run's\n";
  fs::remove_all(base);
}

// Recalibrated data (DATA times 2) between a stop and the next start: the markers no
// longer describe the inputs, so every channel is imaged again, and the log says why.
TEST(Resume, ChangedInputImagesEveryChannelAgain) {
  const std::string base = fresh_dir("spip_resume_changed");
  const std::string reference = reference_products(), out = base + "/out", ms = base + "/sample.ms";
  ASSERT_FALSE(reference.empty()) << "the uninterrupted run failed";
  fs::copy(std::string(SPIP_TEST_DATA) + "/oskar_small.ms", ms, fs::copy_options::recursive);
  ASSERT_EQ(stop_after_markers(command_for(out, ms), out, 6, base + "/stopped.log"), 75) << read_file(base + "/stopped.log");
  const int done_when_stopped = count_markers(out);
  ASSERT_LT(done_when_stopped, 40) << "the run finished before it could be stopped";

  spip::test::scale_data(ms, 2.0f);
  ASSERT_EQ(std::system((command_for(out, ms) + " > " + base + "/again.log 2>&1").c_str()), 0);
  const std::string log = read_file(base + "/again.log");
  EXPECT_NE(log.find("not resuming from the progress markers of " + std::to_string(done_when_stopped) +
                     " channel(s), because " + fs::canonical(ms).string() + " changed ("),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("all 40 channels are imaged again"), std::string::npos) << log;
  EXPECT_EQ(channels_staged(log), 40) << log;
  // Every channel from the new data: twice the reference's restored peak.
  const std::vector<double> before = restored_peaks(reference + "/demo-qa.json"), after = restored_peaks(out + "/demo-qa.json");
  ASSERT_EQ(before.size(), 40u);
  ASSERT_EQ(after.size(), 40u);
  double worst = 0;
  for (std::size_t c = 0; c < 40; ++c) worst = std::max(worst, std::abs(after[c] / before[c] - 2.0));
  EXPECT_LT(worst, 0.01);
  std::cout << "[ measured ] stopped after " << done_when_stopped << " channels, DATA doubled: every channel imaged again, "
            << "restored I peaks 2x the original's to " << worst << "\n";
  fs::remove_all(base);
}

// Settings that do not change the products (parallel.threads, how often progress is
// synced), or only the Faraday stage's (made anew by every run), keep the progress, and
// the log names them; the same channels selected in other words are no change at all.
TEST(Resume, ChangedThreadsStillResume) {
  const std::string base = fresh_dir("spip_resume_threads");
  const std::string out = base + "/out";
  ASSERT_EQ(stop_after_markers(command_for(out), out, 6, base + "/stopped.log"), 75) << read_file(base + "/stopped.log");
  const int done_when_stopped = count_markers(out);
  ASSERT_LT(done_when_stopped, 40) << "the run finished before it could be stopped";

  std::string two_threads = command_for(out);
  two_threads.replace(two_threads.find("--parallel.threads 1"), 20, "--parallel.threads 2");
  two_threads.replace(two_threads.find("--output.checkpoint_interval 0"), 30, "--output.checkpoint_interval 5");
  two_threads += " --input.channel_end 40";  // the channels the default selects, spelled out
  two_threads += " --faraday.rmclean_niter 500";  // the Faraday stage is made anew anyway
  ASSERT_EQ(std::system((two_threads + " > " + base + "/again.log 2>&1").c_str()), 0);
  const std::string log = read_file(base + "/again.log");
  EXPECT_NE(log.find("resuming from the progress markers of " + std::to_string(done_when_stopped) +
                     " channel(s): same inputs and settings; changed for the Faraday stage and catalogue only, "
                     "which the run makes anew: faraday.rmclean_niter 1000 -> 500; changed without effect on the "
                     "products: output.checkpoint_interval 0 -> 5, parallel.threads 1 -> 2"),
            std::string::npos)
      << log;
  EXPECT_EQ(channels_staged(log), 40 - done_when_stopped) << log;
  fs::remove_all(base);
}

// Ctrl-C in a terminal sends SIGINT to mpirun, which passes SIGTERM on to the ranks: they
// stop resumably and say so, and mpirun's own exit code is the one docs/cluster.md names.
TEST(Resume, CtrlCToMpirunStopsResumablyAsDocumented) {
  const std::string base = fresh_dir("spip_resume_ctrl_c");
  const std::string out = base + "/out";
  const pid_t child = start_in_own_session(command_for(out), base + "/stopped.log");
  wait_for_markers(out, 4);
  pid_t mpirun = -1;
  for (pid_t pid : session_members(child))
    if (read_file(fs::path("/proc") / std::to_string(pid) / "cmdline").rfind(MPIEXEC_PATH, 0) == 0) mpirun = pid;
  ASSERT_GT(mpirun, 0);
  kill(mpirun, SIGINT);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  const int code = WEXITSTATUS(status);
  const std::string log = read_file(base + "/stopped.log");
  EXPECT_NE(log.find("the same command resumes it (exit code 75"), std::string::npos) << log;
  const std::string cluster = read_file(std::string(SPIP_TEST_DATA) + "/../docs/cluster.md");
  EXPECT_NE(cluster.find("mpirun then exits with code " + std::to_string(code)), std::string::npos)
      << "docs/cluster.md must name the code a script sees after Ctrl-C: " << code;
  ASSERT_GT(count_markers(out), 0);
  ASSERT_EQ(std::system((command_for(out) + " > " + base + "/again.log 2>&1").c_str()), 0);
  EXPECT_NE(read_file(base + "/again.log").find("resuming from the progress markers"), std::string::npos);
  std::cout << "[ measured ] Ctrl-C (SIGINT to mpirun): mpirun exits with " << code << ", each rank with 75\n";
  fs::remove_all(base);
}

// Ctrl-C to spip run from a terminal without mpirun (SIGINT to the process itself): the
// first stops it resumably, as Slurm's SIGTERM does, and the same command resumes; a
// second Ctrl-C stops it at once (its shell reports 130, 128 + SIGINT).
TEST(Resume, CtrlCToSpipAloneStopsResumablyAndASecondAtOnce) {
  const std::string base = fresh_dir("spip_resume_sigint");
  const std::string out = base + "/out";
  std::string alone = command_for(out);
  alone.replace(alone.find(std::string(SPIP_MPIEXEC) + " 2 "), std::string(SPIP_MPIEXEC).size() + 3, "");
  // Channels of a second or more, so that the second Ctrl-C comes while the first one's
  // channel is still being imaged.
  alone.replace(alone.find("--image.size 256 --image.scale 20"), 33, "--image.size 1024 --image.scale 5");
  const auto stop = [&](const std::string& log, int markers, int signals) {
    const pid_t child = start_in_own_session(alone, log);
    wait_for_markers(out, markers);
    const std::vector<pid_t> ranks = spip_ranks(child);
    EXPECT_EQ(ranks.size(), 1u);
    for (int k = 0; k < signals && !ranks.empty(); ++k) {
      kill(ranks.front(), SIGINT);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    int status = 0;
    waitpid(child, &status, 0);
    return status;
  };
  const int once = stop(base + "/once.log", 4, 1);
  const std::string log = read_file(base + "/once.log");
  ASSERT_TRUE(WIFEXITED(once)) << log;
  EXPECT_EQ(WEXITSTATUS(once), 75) << log;
  EXPECT_NE(log.find("received SIGINT (Ctrl-C; press it again to stop at once)"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(out + "/.demo.claim")) << "a stopped run releases its claim";
  const int done = count_markers(out);
  ASSERT_GE(done, 4);
  ASSERT_LT(done, 40) << "the run finished before it could be stopped";

  const int twice = stop(base + "/twice.log", done + 1, 2);
  const std::string again = read_file(base + "/twice.log");
  EXPECT_NE(again.find("resuming from the progress markers of " + std::to_string(done) + " channel(s)"),
            std::string::npos) << again;
  EXPECT_TRUE(WIFEXITED(twice) && WEXITSTATUS(twice) == 128 + SIGINT) << "status " << twice << ": " << again;

  // Under nohup a hangup stays ignored: the run goes on to the end.
  const std::string quiet = base + "/nohup";
  std::string nohup = command_for(quiet);
  nohup.replace(nohup.find(std::string(SPIP_MPIEXEC) + " 2 "), std::string(SPIP_MPIEXEC).size() + 3, "nohup ");
  const pid_t child = start_in_own_session(nohup, base + "/nohup.log");
  wait_for_markers(quiet, 2);
  for (pid_t rank : spip_ranks(child)) kill(rank, SIGHUP);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << ": " << read_file(base + "/nohup.log");
  fs::remove_all(base);
}

// A signal is acknowledged when it arrives, not when the run reaches its next stop
// point: here a second into the first of two channels that each take 10 s or so to
// CLEAN (300,000 iterations, no threshold).
TEST(Resume, ASignalIsAcknowledgedAtOnce) {
  const std::string base = fresh_dir("spip_resume_acknowledged");
  const std::string out = base + "/out", log = base + "/stopped.log";
  std::string alone = command_for(out) +
                      " --image.channels_out 2 --clean.threshold 0 --clean.auto_threshold 0 --clean.niter 300000"
                      " --parallel.device cpu";
  alone.replace(alone.find(std::string(SPIP_MPIEXEC) + " 2 "), std::string(SPIP_MPIEXEC).size() + 3, "");
  const pid_t child = start_in_own_session(alone, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_file(log).find("created") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::vector<pid_t> ranks = spip_ranks(child);
  ASSERT_EQ(ranks.size(), 1u) << read_file(log);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  kill(ranks.front(), SIGUSR1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string early = read_file(log);
  int status = 0;
  waitpid(child, &status, 0);
  const std::string whole = read_file(log);
  ASSERT_EQ(early.find("channel 0: "), std::string::npos) << "the first channel was done too soon to tell:\n" << whole;
  EXPECT_NE(early.find("] received SIGUSR1; stopping at the next point the run can resume from"), std::string::npos)
      << early;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 75) << whole;
  EXPECT_NE(whole.find("stopping as SIGUSR1 asked"), std::string::npos) << whole;
  fs::remove_all(base);
}

// A mosaic of two pointings 1 deg apart (the sample's sky simulated from each), killed
// while its channels are imaged: the resumed run images again what the killed one did
// not restore (a channel keeps each pointing's model only in memory until it is
// restored) and ends with the uninterrupted run's products, bit for bit. The same after
// a SIGTERM (Slurm's time limit), which stops the run resumably (exit 75).
TEST(Resume, KilledMosaicFinishesWithIdenticalProducts) {
  const std::string base = fresh_dir("spip_resume_mosaic");
  std::string inputs;
  for (const char* ra : {"0", "1"}) {
    const std::string ms = base + "/pointing-ra" + ra + ".ms";
    ASSERT_EQ(spip::test::simulate_sample_pointing(SPIP_SIMULATE_BIN, SPIP_TEST_DATA, ra, 40, "30", ms), 0)
        << read_file(ms + ".log");
    inputs += (inputs.empty() ? "" : " --input.ms ") + ms;
  }
  const auto command = [&](const std::string& out) { return command_for(out, inputs) + " --beam.model airy"; };
  const std::string reference = base + "/reference", resumed = base + "/resumed";
  ASSERT_EQ(std::system((command(reference) + " > " + base + "/reference.log 2>&1").c_str()), 0)
      << read_file(base + "/reference.log");

  ASSERT_NO_FATAL_FAILURE(kill_after_markers(resumed, 6, "record", base + "/killed.log", command(resumed)));
  const int done_when_killed = count_markers(resumed);
  ASSERT_LT(done_when_killed, 40) << "the run finished before it could be killed";
  ASSERT_FALSE(fs::exists(resumed + "/demo-image-pb-I.fits")) << "nothing may look complete after a kill";
  ASSERT_EQ(std::system((command(resumed) + " > " + base + "/resumed.log 2>&1").c_str()), 0);
  const std::string log = read_file(base + "/resumed.log");
  EXPECT_NE(log.find("resuming from the progress markers of " + std::to_string(done_when_killed)), std::string::npos)
      << log;
  EXPECT_NE(log.find("are imaged again, because a mosaic keeps its pointings' models only until restoring"),
            std::string::npos)
      << log;
  const int compared = expect_identical_products(reference, resumed);
  EXPECT_GE(compared, 50);
  std::cout << "[ measured ] mosaic killed after " << done_when_killed << " of 40 channels; " << compared
            << " FITS products identical to the uninterrupted run\n";

  const std::string stopped = base + "/stopped";
  ASSERT_EQ(stop_after_markers(command(stopped), stopped, 4, base + "/stopped.log"), 75)
      << read_file(base + "/stopped.log");
  const int done_when_stopped = count_markers(stopped);
  ASSERT_LT(done_when_stopped, 40) << "the run finished before it could be stopped";
  ASSERT_EQ(std::system((command(stopped) + " > " + base + "/after-stop.log 2>&1").c_str()), 0);
  EXPECT_NE(read_file(base + "/after-stop.log").find("resuming from the progress markers of " +
                                                    std::to_string(done_when_stopped)),
            std::string::npos);
  EXPECT_GE(expect_identical_products(reference, stopped), 50);
  std::cout << "[ measured ] mosaic stopped by SIGTERM after " << done_when_stopped
            << " of 40 channels; resumed, its products identical to the uninterrupted run\n";
  fs::remove_all(base);
}
