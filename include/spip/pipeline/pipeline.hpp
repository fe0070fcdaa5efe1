#pragma once
// One rank's share of a spip run: plan, read its channel block, write its products.
#include <ostream>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/error.hpp"

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class Log;

// An error raised after the ranks began calling collectives: possibly seen by this rank
// alone, so the job must be aborted rather than left with peers waiting forever.
class RankFailure : public Error {
 public:
  explicit RankFailure(const Error& cause) : Error(cause.what(), cause.file(), cause.line(), cause.code()) {}
};

// A failure every rank learnt of in one collective call: every rank throws it, and
// rank 0's message names what failed on which ranks, to be reported once.
class JobFailure : public Error {
 public:
  using Error::Error;
};

// Every rank stopped together on a signal, leaving the progress markers of the channels
// it finished: not a failure, and the same command resumes the run.
class Interrupted : public Error {
 public:
  Interrupted(const std::string& what, const char* file, int line) : Error(what, file, line, ExitCode::interrupted) {}
};

struct Products {
  std::vector<std::string> paths;  // complete products, known on rank 0
};

// Runs the stages for this rank. Problems found while planning (bad MS, wrong
// selection, no GPU) make every rank throw, so all ranks exit with the same code and
// none waits for another; errors after planning throw RankFailure. SIGTERM or SIGUSR1
// on any rank makes every rank finish its current channel and throw Interrupted.
// Rank 0 first claims the output folder and prefix for the run (run_claim.hpp):
// `break_claim` clears another's claim, for one left by a killed job of another node.
Products run(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim);

// spip --plan: the job's figures for `ranks` ranks (0: the ranks it runs on) from the
// inputs' metadata and rates timed on this machine, with what to ask sbatch for.
// Not collective: call it on one rank. `previous_qa` (optional) is a qa.json whose
// measured times replace the rates timed here.
struct PlanRequest {
  int ranks = 0;
  std::string previous_qa;
};
void print_plan(const Config& config, const PlanRequest& request, int mpi_ranks, std::ostream& out);

}  // namespace spip::pipeline
