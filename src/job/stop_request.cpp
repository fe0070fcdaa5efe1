#include "spip/job/stop_request.hpp"

#include <signal.h>

#include <atomic>
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

extern "C" void on_stop_signal(int number) { signalled.store(number); }

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
    case SIGINT: return "SIGINT (Ctrl-C; press it again to stop at once)";
    case SIGHUP: return "SIGHUP (the terminal closed)";
    default: return "a signal";
  }
}

}  // namespace

StopRequest::StopRequest(const parallel::MpiContext& mpi, const Log& log) : notice_(mpi), log_(log) {
  signalled.store(0);
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

bool StopRequest::requested() {
  const int number = signalled.load();
  if (number != 0) notice_.announce();
  const bool stop = number != 0 || notice_.heard();
  if (stop && !logged_) {
    logged_ = true;
    log_.info(number != 0 ? std::string("received ") + signal_name(number) +
                                "; finishing the current channel, then stopping"
                          : "another rank was asked to stop; finishing the current channel, then stopping");
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
