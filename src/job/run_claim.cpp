#include "spip/job/run_claim.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "spip/error.hpp"
#include "spip/job/text_file.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;

// A claim is written a moment after it is made; one that names no holder this long
// after was left by a run killed in that moment. Generous, because the file's time is
// the file server's clock and the comparison is this node's.
constexpr auto unnamed_claim_age = std::chrono::minutes(10);

struct Holder {
  std::string host;
  long pid = 0;
  std::string process_start;  // field 22 of /proc/PID/stat: ticks after boot
  std::string started;        // UTC, for people
  std::string slurm_job;      // SLURM_JOB_ID and SLURM_RESTART_COUNT, in a Slurm job
  long slurm_restart = 0;
  std::string text;  // the file as read, to recognise it again
};

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

long slurm_restart() { return std::atol(environment("SLURM_RESTART_COUNT").c_str()); }

// A process as /proc shows it: its state letter (Z: a zombie) and start time; "" for both
// where there is no such process.
struct Process {
  char state = 0;
  std::string start;
};

Process process(long pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t end_of_name = stat.rfind(')');
  Process found;
  if (end_of_name == std::string::npos) return found;
  std::istringstream fields(stat.substr(end_of_name + 1));
  fields >> found.state;
  for (int field = 4; field <= 22 && fields >> found.start; ++field) {
  }
  return found;
}

std::string claim_text() {
  std::string text = "host " + host_name() + "\npid " + std::to_string(getpid()) + "\nprocess_start " +
                     process(getpid()).start + "\nstarted " + utc_now() + "\n";
  if (!environment("SLURM_JOB_ID").empty())
    text += "slurm_job " + environment("SLURM_JOB_ID") + "\nslurm_restart " + std::to_string(slurm_restart()) + "\n";
  return text;
}

Holder read_holder(const std::string& path) {
  Holder holder;
  holder.text = read_text(path);
  std::istringstream lines(holder.text);
  for (std::string key, value; lines >> key >> value;) {
    if (key == "host") holder.host = value;
    if (key == "pid") holder.pid = std::atol(value.c_str());
    if (key == "process_start") holder.process_start = value;
    if (key == "started") holder.started = value;
    if (key == "slurm_job") holder.slurm_job = value;
    if (key == "slurm_restart") holder.slurm_restart = std::atol(value.c_str());
  }
  return holder;
}

bool unnamed_for_long(const std::string& path) {
  std::error_code error;
  const auto made = fs::last_write_time(path, error);
  return !error && fs::file_time_type::clock::now() - made > unnamed_claim_age;
}

// Whether the holder is gone: an earlier start of this Slurm job (a requeued job's
// restart count grows; steps of one allocation share it, so they hold), or on this host
// a process that has ended (no /proc entry), is a zombie (a killed rank not yet
// reaped), or has another start time (its pid reused). Another host's process cannot
// be checked from here.
bool gone(const Holder& holder, const std::string& path) {
  if (holder.host.empty()) return unnamed_for_long(path);
  if (!holder.slurm_job.empty() && holder.slurm_job == environment("SLURM_JOB_ID") &&
      holder.slurm_restart < slurm_restart())
    return true;
  if (holder.host != host_name() || holder.pid <= 0) return false;
  const Process now = process(holder.pid);
  return now.state == 0 || now.state == 'Z' || now.start != holder.process_start;
}

std::string describe(const Holder& holder) {
  if (holder.host.empty()) return "a run that is starting (its claim names no holder yet)";
  return "process " + std::to_string(holder.pid) + " on " + holder.host +
         (holder.slurm_job.empty() ? "" : " (Slurm job " + holder.slurm_job + ")") + ", started " + holder.started;
}

std::string describe_cleared(const Holder& holder, bool break_claim) {
  if (holder.host.empty()) return "a run killed while making it (the claim names no holder)";
  return describe(holder) + (break_claim ? " (--break-claim)" : ", which is gone");
}

[[noreturn]] void unusable(const std::string& what) { SPIP_THROW(InputError, what + ": " + std::strerror(errno)); }

// Creates the claim file holding `text`; false if it exists.
bool create(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    unusable(path + ": cannot create the run's claim");
  }
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  close(fd);
  if (!written) {
    unlink(path.c_str());
    errno = saved;
    unusable(path + ": cannot write the run's claim");
  }
  return true;
}

// Moves a stale claim aside, unless it changed since it was read: then another run has
// just taken the folder, and its claim goes back.
bool clear(const std::string& path, const Holder& stale) {
  const std::string aside = path + ".stale." + std::to_string(getpid());
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return true;  // another run cleared it first
    unusable(path + ": cannot clear a stale claim");
  }
  if (read_text(aside) != stale.text) {
    if (link(aside.c_str(), path.c_str()) != 0 && errno != EEXIST) unusable(path + ": cannot restore a claim");
    unlink(aside.c_str());
    return false;
  }
  unlink(aside.c_str());
  return true;
}

}  // namespace

RunClaim::RunClaim(const std::string& path, const std::string& prefix, bool break_claim, std::string& cleared)
    : dir_(fs::path(path).parent_path().string()), path_(path), text_(claim_text()) {
  std::error_code error;
  made_dir_ = fs::create_directories(dir_, error);
  if (error) SPIP_THROW(InputError, dir_ + ": cannot create the output folder: " + error.message());
  cleared.clear();
  // Two rounds: a stale claim cleared in the first is replaced in the second.
  for (int round = 0; round < 2; ++round) {
    if (create(path_, text_)) return;
    const Holder holder = read_holder(path_);
    if (!(break_claim || gone(holder, path_)) || !clear(path_, holder)) break;
    cleared = describe_cleared(holder, break_claim);
  }
  SPIP_THROW(InputError, dir_ + " is in use by another run with prefix " + prefix + ": " +
                             describe(read_holder(path_)) + " holds " + path_ +
                             "; if that run is gone, start again with --break-claim");
}

RunClaim::~RunClaim() {
  // Another run may have broken this claim (--break-claim) and made its own.
  if (read_text(path_) == text_) unlink(path_.c_str());
  if (made_dir_) rmdir(dir_.c_str());  // fails, as it should, where anything was written
}

}  // namespace spip::pipeline
