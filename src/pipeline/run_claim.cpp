#include "run_claim.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "products.hpp"
#include "spip/error.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;

struct Holder {
  std::string host;
  long pid = 0;
  std::string started;
  std::string slurm_job;  // SLURM_JOB_ID of the holder, if it ran in a Slurm job
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

Holder read_holder(const std::string& path) {
  Holder holder;
  holder.text = read_text(path);
  std::istringstream lines(holder.text);
  for (std::string key, value; lines >> key >> value;) {
    if (key == "host") holder.host = value;
    if (key == "pid") holder.pid = std::atol(value.c_str());
    if (key == "started") holder.started = value;
    if (key == "slurm_job") holder.slurm_job = value;
  }
  return holder;
}

std::string process_name(long pid) {
  std::string name = read_text("/proc/" + std::to_string(pid) + "/comm");
  while (!name.empty() && name.back() == '\n') name.pop_back();
  return name;
}

// A killed rank whose parent died too may stay a zombie until init reaps it: it
// answers kill(pid, 0) but runs no more.
bool zombie(long pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t end_of_name = stat.rfind(')');
  return end_of_name != std::string::npos && stat.compare(end_of_name + 1, 2, " Z") == 0;
}

std::string slurm_job() {
  const char* id = std::getenv("SLURM_JOB_ID");
  return id ? id : "";
}

// A holder of this Slurm job (Slurm runs a job once at a time, so it is an earlier
// start of this requeued job), or on this host with its process gone, a zombie, or
// now another program (its pid reused). Another host's process cannot be checked from here.
bool gone(const Holder& holder) {
  if (!holder.slurm_job.empty() && holder.slurm_job == slurm_job()) return true;
  if (holder.host != host_name() || holder.pid <= 0) return false;
  if (kill(static_cast<pid_t>(holder.pid), 0) != 0 && errno == ESRCH) return true;
  return zombie(holder.pid) || process_name(holder.pid) != process_name(getpid());
}

std::string describe(const Holder& holder) {
  if (holder.host.empty()) return "a run that is starting (its claim is being written)";
  return "process " + std::to_string(holder.pid) + " on " + holder.host +
         (holder.slurm_job.empty() ? "" : " (Slurm job " + holder.slurm_job + ")") + ", started " + holder.started;
}

[[noreturn]] void unusable(const std::string& what) { SPIP_THROW(InputError, what + ": " + std::strerror(errno)); }

// Creates the claim file; false if it exists.
bool create(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return false;
    unusable(path + ": cannot create the run's claim");
  }
  std::string text = "host " + host_name() + "\npid " + std::to_string(getpid()) + "\nstarted " + utc_now() + "\n";
  if (!slurm_job().empty()) text += "slurm_job " + slurm_job() + "\n";
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
  if (std::rename(path.c_str(), aside.c_str()) != 0) return errno == ENOENT;
  if (read_text(aside) != stale.text) {
    if (link(aside.c_str(), path.c_str()) != 0 && errno != EEXIST) unusable(path + ": cannot restore a claim");
    unlink(aside.c_str());
    return false;
  }
  unlink(aside.c_str());
  return true;
}

}  // namespace

std::string RunClaim::path_for(const std::string& dir, const std::string& prefix) {
  return (fs::path(dir) / ("." + prefix + ".claim")).string();
}

RunClaim::RunClaim(const std::string& dir, const std::string& prefix, bool break_claim, std::string& cleared)
    : path_(path_for(dir, prefix)) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) SPIP_THROW(InputError, dir + ": cannot create the output folder: " + error.message());
  cleared.clear();
  // Two rounds: a stale claim cleared in the first is replaced in the second.
  for (int round = 0; round < 2; ++round) {
    if (create(path_)) return;
    const Holder holder = read_holder(path_);
    const bool stale = !holder.host.empty() && (break_claim || gone(holder));
    if (!stale || !clear(path_, holder)) break;
    cleared = describe(holder) + (break_claim ? " (--break-claim)" : ", which is gone");
  }
  const Holder holder = read_holder(path_);
  SPIP_THROW(InputError, dir + " is in use by another run with prefix " + prefix + ": " + describe(holder) +
                             " holds " + path_ + "; if that run is gone, start again with --break-claim");
}

RunClaim::~RunClaim() { unlink(path_.c_str()); }

}  // namespace spip::pipeline
