#pragma once
// Inputs that arrive split, made from one MS by `spip-simulate --split` (the MS's own
// visibilities rearranged by channel, no other tool's copy). C++17.
#include <string>
#include <vector>

namespace spip::test {

// `ms` as one MS per entry of `windows`, each "FIRST-LAST" (a channel range of the
// input's one window, high to low where LAST < FIRST) or several such separated by
// spaces (spectral windows of one MS), written as NAME0.ms, NAME1.ms, ... into the
// running test's scratch folder (scratch.hpp). A failing split fails the test with its
// log; the paths are returned in the order of `windows`.
std::vector<std::string> split_ms(const std::string& simulate_bin, const std::string& ms,
                                  const std::vector<std::string>& windows, const std::string& name);

}  // namespace spip::test
