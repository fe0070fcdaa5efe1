#pragma once
// A number in a message as people write it: "5", "0.1", "1.5e+06", not to_string's
// "0.100000", which also prints a small value as 0.000000.
#include <sstream>
#include <string>

namespace spip {

inline std::string number_text(double value, int significant = 12) {
  std::ostringstream text;
  text.precision(significant);
  text << value;
  return text.str();
}

}  // namespace spip
