#include "scratch.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace spip::test {
namespace fs = std::filesystem;

namespace {

fs::path made_dir;

// Named after the tests the process runs (CTest runs one per process: its filter),
// so that a kept folder says whose it is.
std::string process_name() {
  std::string name = GTEST_FLAG_GET(filter);
  if (name.empty() || name == "*") name = "test";
  if (name.size() > 60) name.resize(60);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';  // parameterised suites hold '/'
  return name;
}

fs::path make_fresh_dir() {
  const char* tmpdir = std::getenv("TMPDIR");
  const fs::path base = tmpdir && *tmpdir ? fs::path(tmpdir) : fs::temp_directory_path();
  fs::create_directories(base);
  const std::string name = process_name();
  std::string pattern = (base / ("spip_" + name + "_XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) throw std::runtime_error("cannot make a scratch folder from " + pattern);
  // Printed now, so that a test that crashes or times out still says where its files are.
  std::fprintf(stderr, "test scratch folder: %s\n", buffer.data());
  return fs::path(buffer.data());
}

// Removes `dir`, again while something still removes files from it: an MPI singleton's
// Open MPI daemon outlives spip and clears its session directory there on its own time,
// and a removal racing it stops at the first file that vanished. Gives up after 10 s.
void remove_when_released(const fs::path& dir) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::error_code error;
    fs::remove_all(dir, error);
    if (!fs::exists(dir)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "test scratch folder could not be removed: %s\n", dir.c_str());
}

// Makes the folder before the first test and makes it the TMPDIR of every process a
// test starts (spip, mpiexec and what they start): Open MPI's session directory, and
// anything else they put in TMPDIR, is then this process's own, never shared with the
// tests CTest runs beside it. So is spip's FFTW wisdom: a test that compares two runs
// bit for bit needs both to transform with the same plans, and a wisdom file in $HOME
// that a test beside it rewrites with plans timed under other load breaks that.
// Removes the folder after the last test of the process, or says where it was kept.
class ScratchCleanup : public testing::Environment {
 public:
  void SetUp() override {
    if (made_dir.empty()) made_dir = make_fresh_dir();
    setenv("TMPDIR", made_dir.c_str(), 1);
    setenv("SPIP_FFTW_WISDOM", (made_dir / "fftwf-wisdom").c_str(), 1);
  }
  void TearDown() override {
    if (made_dir.empty()) return;
    if (testing::UnitTest::GetInstance()->Passed()) {
      remove_when_released(made_dir);
    } else {
      std::fprintf(stderr, "test scratch folder kept: %s\n", made_dir.c_str());
    }
  }
};

[[maybe_unused]] testing::Environment* const cleanup = testing::AddGlobalTestEnvironment(new ScratchCleanup);

}  // namespace

fs::path scratch_dir() {
  if (made_dir.empty()) made_dir = make_fresh_dir();
  const testing::TestInfo* test = testing::UnitTest::GetInstance()->current_test_info();
  if (!test) return made_dir;
  std::string name = std::string(test->test_suite_name()) + "." + test->name();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') c = '_';
  const fs::path dir = made_dir / name;
  fs::create_directories(dir);
  return dir;
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path scratch_path(const std::string& name) {
  const fs::path path = scratch_dir() / name;
  fs::create_directories(path.parent_path());
  return path;
}

}  // namespace spip::test
