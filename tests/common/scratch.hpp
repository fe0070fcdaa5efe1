#pragma once
// Every test process writes into one folder of its own, made fresh for this run under
// $TMPDIR (mkdtemp), so that no test reads what an earlier run or a neighbouring test left.
// The folder is removed when the process's tests pass and kept, with its path printed, when
// one fails. C++17, for the test binaries that include casacore.
#include <filesystem>
#include <string>

namespace spip::test {

// This process's scratch folder, made on first use.
const std::filesystem::path& scratch_dir();

// scratch_dir() / name, its parent folders made.
std::filesystem::path scratch_path(const std::string& name);

}  // namespace spip::test
