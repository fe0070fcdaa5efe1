#include "spip/job/text_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "spip/common/durable_rename.hpp"
#include "spip/error.hpp"

namespace spip::pipeline {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  std::FILE* out = std::fopen(partial.c_str(), "w");
  if (!out) SPIP_THROW(InputError, partial + ": cannot write: " + std::strerror(errno));
  bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  int reason = errno;
  if (std::fclose(out) != 0 && written) {
    written = false;
    reason = errno;
  }
  if (!written) {
    std::remove(partial.c_str());
    SPIP_THROW(InputError, partial + ": cannot write: " + std::strerror(reason));
  }
  if (const std::error_code error = durable_rename(partial, path))
    SPIP_THROW(InputError, path + ": cannot rename from .partial: " + error.message());
}

}  // namespace spip::pipeline
