// The stop request under mpiexec: one rank's signal stops every rank, and a signal that
// comes once the run is past its last stop point is ignored rather than fatal.
#include <gtest/gtest.h>

#include <signal.h>

#include <regex>
#include <string>

#include "spip/job/failures.hpp"
#include "spip/job/log.hpp"
#include "spip/job/stop_request.hpp"
#include "mpi_main.hpp"
#include "spip/parallel/mpi_context.hpp"

namespace {
const spip::parallel::MpiContext* const& mpi = spip::test::world;
}

TEST(StopRequest, OneRanksSignalStopsEveryRankAtTheNextStopPoint) {
  const spip::pipeline::Log log(mpi->rank(), mpi->size());
  spip::pipeline::StopRequest stop(*mpi, log);
  stop.leave_if_requested("nothing");  // no signal yet: every rank goes on
  if (mpi->is_root()) raise(SIGUSR1);
  EXPECT_THROW(stop.leave_if_requested("nothing"), spip::pipeline::Interrupted);
}

// Slurm's warning may come while rank 0 commits a complete run and the others wait in
// MPI_Finalize: with the default handling back, it killed them and the job exited 138.
TEST(StopRequest, ASignalAfterTheRunIsIgnored) {
  const spip::pipeline::Log log(mpi->rank(), mpi->size());
  { spip::pipeline::StopRequest stop(*mpi, log); }
  raise(SIGUSR1);
  raise(SIGTERM);
  mpi->barrier();  // reached only by a rank the signals did not end
}


// A signal that comes while MPI starts, before the run's StopRequest exists, waits for it
// (spip holds the stop signals from its first moment) and stops the run at its first
// stop point, on every rank, instead of killing the rank that got it.
TEST(StopRequest, ASignalHeldFromTheStartStopsTheRunAtItsFirstStopPoint) {
  spip::pipeline::StopRequest::hold_signals();
  if (mpi->is_root()) raise(SIGUSR1);  // blocked: pending until the StopRequest takes it
  const spip::pipeline::Log log(mpi->rank(), mpi->size());
  spip::pipeline::StopRequest stop(*mpi, log);
  EXPECT_THROW(stop.leave_if_requested("nothing"), spip::pipeline::Interrupted);
}

// A signal while the run is planned is taken without a word until the plan stands, and
// acknowledged then: a run that fails while planning prints only its error, though
// mpiexec sends the other ranks SIGTERM as one rank leaves with it.
TEST(StopRequest, ASignalWhilePlanningIsAcknowledgedOnceTheRunIsPlanned) {
  const spip::pipeline::Log log(mpi->rank(), mpi->size());
  spip::pipeline::StopRequest stop(*mpi, log);
  testing::internal::CaptureStdout();
  if (mpi->is_root()) raise(SIGUSR1);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  testing::internal::CaptureStdout();
  stop.acknowledge_signals();
  const std::string acknowledged = testing::internal::GetCapturedStdout();
  // Stamped as every log line is, though the handler writes it.
  if (mpi->is_root())
    EXPECT_TRUE(std::regex_search(acknowledged, std::regex(R"(^\[spip 0/\d+ \+\d+\.\d{3} s\] received SIGUSR1; )")))
        << acknowledged;
  else
    EXPECT_EQ(acknowledged, "");
  EXPECT_THROW(stop.leave_if_requested("nothing"), spip::pipeline::Interrupted);
}
