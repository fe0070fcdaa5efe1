#include "spip/job/log.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "spip/common/number_text.hpp"

namespace spip::pipeline {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

std::string jansky_text(double jy) {
  const double size = std::abs(jy);
  if (size >= 1 || !(size > 0)) return number_text(jy, 4) + " Jy";
  if (size >= 1e-3) return number_text(jy * 1e3, 4) + " mJy";
  return number_text(jy * 1e6, 4) + " uJy";
}

std::string duration_text(double seconds) {
  if (!(seconds >= 120)) return number_text(seconds, 3) + " s";
  if (seconds < 7200) return number_text(seconds / 60, 3) + " min";
  return fixed(seconds / 3600, 2) + " h";
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
