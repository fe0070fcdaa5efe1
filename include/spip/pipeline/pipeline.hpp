#pragma once
// One rank's share of a spip run: plan, read its channel block, write its products.
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
Products run(const Config& config, const parallel::MpiContext& mpi, const Log& log);

}  // namespace spip::pipeline
