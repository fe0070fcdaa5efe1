#pragma once
// Wall time of a stage, for the per-rank logs and the backends' timings.
#include <chrono>

namespace spip {

// Started on construction, read with seconds().
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace spip
