#pragma once
// Every test process writes into one folder of its own, made fresh for this run under
// $TMPDIR (mkdtemp), so that no test reads what an earlier run or a neighbouring test left;
// each test has its own subfolder there. The folder is removed when the process's tests
// pass and kept when one fails; its path is printed when it is made. C++17, for the test
// binaries that include casacore.
#include <filesystem>
#include <string>

namespace spip::test {

// The running test's own folder (SUITE.TEST in this process's folder), made on first
// use; outside a test (SetUpTestSuite) the process's folder itself.
std::filesystem::path scratch_dir();

// scratch_dir() / name, its parent folders made.
std::filesystem::path scratch_path(const std::string& name);

// The whole file (a run's log, say), or "" where it cannot be read.
std::string file_text(const std::filesystem::path& path);

}  // namespace spip::test
