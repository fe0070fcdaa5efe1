#include "spip/job/stop_request.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <ctime>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <utility>

#include "spip/job/failures.hpp"
#include "spip/job/log.hpp"

namespace spip::pipeline {
namespace {

// The signal's number; 0: none. Lock-free, so safe in a handler, and read by the main
// thread whichever thread the signal interrupted.
std::atomic<int> signalled{0};
static_assert(std::atomic<int>::is_always_lock_free);

const char* signal_name(int number);
const char* signal_note(int number);
constexpr std::array<int, 4> stop_signals{SIGTERM, SIGUSR1, SIGINT, SIGHUP};

// What the handler writes at once, one line per signal: the run may be minutes from
// its next stop point, and the one who sent the signal wants to know it arrived. Its
// time stamp, "+S.mmm s" since the log's start as every log line has, is written in the
// handler between the two parts set here.
struct Notices {
  std::array<char, 64> head{};  // "[spip R/N +"
  std::size_t head_length = 0;
  std::array<std::array<char, 256>, stop_signals.size()> text{};  // " s] received ..."
  std::array<std::size_t, stop_signals.size()> length{};
  long long log_start_ns = 0;  // CLOCK_MONOTONIC, which the log's steady clock reads
  void set(const std::string& prefix, long long start_ns) {
    log_start_ns = start_ns;
    const int h = std::snprintf(head.data(), head.size(), "%s +", prefix.c_str());
    head_length = h > 0 ? std::min(static_cast<std::size_t>(h), head.size() - 1) : 0;
    for (std::size_t k = 0; k < stop_signals.size(); ++k) {
      const int n = std::snprintf(text[k].data(), text[k].size(),
                                  " s] received %s%s; stopping at the next point the run can resume from "
                                  "(after the channel in hand, or the Faraday stage's row group)\n",
                                  signal_name(stop_signals[k]), signal_note(stop_signals[k]));
      length[k] = n > 0 ? std::min(static_cast<std::size_t>(n), text[k].size() - 1) : 0;
    }
  }
};
Notices notices;

long long monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

// "S.mmm" of `ns`, by hand into `out`: snprintf may not be called in a handler.
std::size_t seconds_text(long long ns, char* out) {
  const long long ms = std::max(0LL, ns / 1000000);
  char digits[24];
  std::size_t count = 0;
  for (long long s = ms / 1000; count == 0 || s > 0; s /= 10) digits[count++] = static_cast<char>('0' + s % 10);
  std::size_t k = 0;
  while (count > 0) out[k++] = digits[--count];
  const int fraction = static_cast<int>(ms % 1000);
  out[k++] = '.';
  out[k++] = static_cast<char>('0' + fraction / 100);
  out[k++] = static_cast<char>('0' + fraction / 10 % 10);
  out[k++] = static_cast<char>('0' + fraction % 10);
  return k;
}
std::atomic<bool> notices_set{false};  // before then, a signal is taken without a word
static_assert(std::atomic<bool>::is_always_lock_free);

// Async-signal-safe: one write(2) of text set before the handlers could call it, and the
// time stamp formatted here.
void write_notice(int number) {
  const Notices& notice = notices;
  for (std::size_t k = 0; k < stop_signals.size(); ++k)
    if (stop_signals[k] == number) {
      const int saved = errno;  // the interrupted code may be about to read it
      std::array<char, 64 + 24 + 256> line;
      std::size_t used = 0;
      for (std::size_t c = 0; c < notice.head_length; ++c) line[used++] = notice.head[c];
      used += seconds_text(monotonic_ns() - notice.log_start_ns, line.data() + used);
      for (std::size_t c = 0; c < notice.length[k]; ++c) line[used++] = notice.text[k][c];
      [[maybe_unused]] const ssize_t written = write(STDOUT_FILENO, line.data(), used);
      errno = saved;
    }
}

extern "C" void on_stop_signal(int number) {
  signalled.store(number);
  if (notices_set.load(std::memory_order_acquire)) write_notice(number);
}

struct sigaction handler_for(void (*handler)(int), int flags) {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | flags;  // reads and writes in flight carry on
  return action;
}

const char* signal_name(int number) {
  switch (number) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

const char* signal_note(int number) {
  switch (number) {
    case SIGINT: return " (Ctrl-C; press it again to stop at once)";
    case SIGHUP: return " (the terminal closed)";
    default: return "";
  }
}

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int number : stop_signals) sigaddset(&set, number);
  return set;
}

// The handlers, once a process image: a Ctrl-C taken before the StopRequest has reset
// its handler, and the next one must stop the run at once.
bool handlers_installed = false;

void install_handlers() {
  if (handlers_installed) return;
  handlers_installed = true;
  const struct sigaction action = handler_for(on_stop_signal, 0);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);
  // From a terminal (spip run without mpirun, which turns them into SIGTERM): Ctrl-C
  // stops the run resumably, and its handler then resets, so a second one stops it at
  // once; a hangup, which a closing session may send more than once, always stops it
  // resumably. Where they are ignored (nohup, a script's background job), they stay so.
  const struct sigaction once = handler_for(on_stop_signal, SA_RESETHAND), every = handler_for(on_stop_signal, 0);
  for (const auto& [number, handling] : {std::pair{SIGINT, &once}, std::pair{SIGHUP, &every}}) {
    struct sigaction current;
    if (sigaction(number, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) sigaction(number, handling, nullptr);
  }
}

// A signal before the process's first StopRequest is its run's; later ones start afresh.
bool first_request = true;

void unblock() {
  const sigset_t set = stop_signal_set();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace

// The handlers too: threads that libraries start before main (OpenBLAS's) have the
// signals unblocked, and one of them may take a signal where spip does not start itself
// again (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).
void StopRequest::hold_signals() {
  install_handlers();
  const sigset_t set = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void StopRequest::release_signals() {
  for (int number : stop_signals) {
    struct sigaction current;
    if (sigaction(number, nullptr, &current) == 0 && current.sa_handler == on_stop_signal) signal(number, SIG_DFL);
  }
  unblock();
  if (const int number = signalled.exchange(0); number != 0) raise(number);
}

StopRequest::StopRequest(const parallel::MpiContext& mpi, const Log& log) : notice_(mpi), log_(log) {
  if (!first_request) signalled.store(0);
  first_request = false;
  notices_set.store(false, std::memory_order_release);
  notices.set("[spip " + std::to_string(mpi.rank()) + "/" + std::to_string(mpi.size()),
              monotonic_ns() - std::llround(log.elapsed_s() * 1e9));
  install_handlers();
  unblock();  // those held since hold_signals() arrive now
}

void StopRequest::acknowledge_signals() {
  // A signal between the two lines is written twice at most: never lost.
  notices_set.store(true, std::memory_order_release);
  if (const int number = signalled.load(); number != 0) write_notice(number);
}

bool StopRequest::requested() {
  const int number = signalled.load();
  if (number != 0) notice_.announce();
  const bool stop = number != 0 || notice_.heard();
  if (stop && !logged_) {
    logged_ = true;
    log_.info(number != 0 ? std::string("stopping as ") + signal_name(number) + " asked, where the ranks next meet"
                          : "another rank was asked to stop; stopping where the ranks next meet");
  }
  return stop;
}

void StopRequest::leave_if_requested(const std::string& done) {
  if (!notice_.agree(requested())) return;
  log_.info("stopped: " + done);
  // mpirun reports its own code where it was signalled itself (Ctrl-C): docs/cluster.md.
  SPIP_THROW(Interrupted, "stopped on request before the run was complete; the same command resumes it (exit code " +
                              std::to_string(static_cast<int>(ExitCode::interrupted)) +
                              "; Open MPI's mpirun exits with 1 instead when it was itself sent SIGINT or SIGTERM)");
}

}  // namespace spip::pipeline
