#pragma once
// Names compared in any case: telescopes, column names, booleans. ASCII only, as the
// names are. (std::transform, not ranges: the ms and sim rooms are C++17.)
#include <algorithm>
#include <cctype>
#include <string>

namespace spip {

inline std::string lower_case(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

inline std::string upper_case(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

}  // namespace spip
