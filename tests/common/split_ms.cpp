#include "split_ms.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "scratch.hpp"

namespace spip::test {

std::vector<std::string> split_ms(const std::string& simulate_bin, const std::string& ms,
                                  const std::vector<std::string>& windows, const std::string& name) {
  std::vector<std::string> paths;
  for (std::size_t k = 0; k < windows.size(); ++k) {
    const std::filesystem::path out = scratch_path(name + std::to_string(k) + ".ms");
    const std::string log = out.string() + ".log";
    const std::string command =
        simulate_bin + " --split " + ms + " --out " + out.string() + " --windows " + windows[k] + " > " + log + " 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command << "\n" << file_text(log);
    paths.push_back(out.string());
  }
  return paths;
}

}  // namespace spip::test
