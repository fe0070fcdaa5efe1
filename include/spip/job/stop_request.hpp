#pragma once
// A run asked to stop by the batch system: SIGTERM at the time limit, or SIGUSR1 as
// the warning that Slurm sends ahead of it (--signal=B:USR1@SECONDS, forwarded by the
// bundled scripts); or from a terminal, SIGINT (Ctrl-C) or SIGHUP. The rank that is
// signalled tells the others; each finishes the channel it is imaging, and all leave
// together at the next point where they meet.
#include <string>

#include "spip/parallel/mpi_context.hpp"

namespace spip::pipeline {

class Log;

class StopRequest {
 public:
  // Installs the handlers for the rest of the process: a signal after the last point
  // where ranks meet is one the run is past, and ignored. With the default handling back
  // in place there, Slurm's warning killed ranks waiting in MPI_Finalize while rank 0
  // was still committing a complete run's products. Once the run is planned
  // (acknowledge_signals()), each signal is acknowledged on standard output when it
  // arrives, wherever the run is.
  StopRequest(const parallel::MpiContext& mpi, const Log& log);
  // From here on a signal is acknowledged at once, and one taken while planning is
  // acknowledged now. A run that fails while planning says only why: mpiexec sends the
  // other ranks SIGTERM as soon as one leaves with an error, and their notices printed
  // beside that one error, on a race.
  void acknowledge_signals();
  // From the process's first moment (before it starts itself again and before MPI
  // starts) the stop signals wait, blocked, until the constructor takes them: one then
  // (Slurm's warning to a job that starts late in its allocation) would otherwise kill
  // the rank. What does not run the pipeline (--help, --plan) releases them to their
  // default action instead, and one that came meanwhile acts at once.
  static void hold_signals();
  static void release_signals();
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  // Between channels: true once this rank was signalled or heard that another was.
  bool requested();
  // Collective, where every rank meets: throws Interrupted on every rank when any rank
  // was asked to stop. `done` says what this rank leaves behind, for its log line.
  void leave_if_requested(const std::string& done);

 private:
  parallel::StopNotice notice_;
  const Log& log_;
  bool logged_ = false;
};

}  // namespace spip::pipeline
