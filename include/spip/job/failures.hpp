#pragma once
// How a run fails or stops once the ranks work together, for every room and the app.
#include <string>

#include "spip/error.hpp"

namespace spip::pipeline {

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

}  // namespace spip::pipeline
