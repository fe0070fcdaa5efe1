#pragma once
// Per-rank log lines with the time since start, so interleaved output of many ranks
// can be read and timed: "[spip 1/4 +12.345 s] message".
#include <chrono>
#include <string>

#include "spip/common/stopwatch.hpp"

namespace spip::pipeline {

class Log {
 public:
  Log(int rank, int size) : rank_(rank), size_(size), start_(std::chrono::steady_clock::now()) {}
  void info(const std::string& message) const;  // every rank
  void root(const std::string& message) const;  // rank 0 only
  double elapsed_s() const;

 private:
  int rank_, size_;
  std::chrono::steady_clock::time_point start_;
};

// `value` with `digits` decimals, for log lines.
std::string fixed(double value, int digits);
// A flux density in the unit that keeps it readable (uJy, mJy or Jy, 4 significant
// digits): an uncalibrated all-sky set's 5e5 Jy is not "506450970.900 mJy".
std::string jansky_text(double jy);
// A span of time in s, min or h as its length calls for: a snapshot's 36 s is not "0.01 h".
std::string duration_text(double seconds);

}  // namespace spip::pipeline
