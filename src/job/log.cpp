#include "spip/job/log.hpp"

#include <cstdio>
#include <sstream>

namespace spip::pipeline {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

double Log::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Log::info(const std::string& message) const {
  // One fprintf per line keeps lines of different ranks from interleaving mid-line.
  std::fprintf(stdout, "[spip %d/%d +%.3f s] %s\n", rank_, size_, elapsed_s(), message.c_str());
  std::fflush(stdout);
}

void Log::root(const std::string& message) const {
  if (rank_ == 0) info(message);
}

}  // namespace spip::pipeline
