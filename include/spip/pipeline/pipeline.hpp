#pragma once
// One rank's share of a spip run: plan, read its channel block, write its products.
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/job/failures.hpp"

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class Log;

struct CommittedProducts {
  std::vector<std::string> paths;  // complete products, known on rank 0
};

// Runs the stages for this rank. Problems found while planning (bad MS, wrong
// selection, no GPU) make every rank throw, so all ranks exit with the same code and
// none waits for another; errors after planning throw RankFailure. SIGTERM or SIGUSR1
// on any rank makes every rank finish its current channel and throw Interrupted.
// Rank 0 first claims the output folder and prefix for the run (run_claim.hpp):
// `break_claim` clears another's claim, for one left by a killed job of another node.
CommittedProducts run(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim);

}  // namespace spip::pipeline
