#pragma once
// A Measurement Set with only the parallel hands of another's linear correlations, for
// the inputs that cannot give Q and U. Written with casacore directly (C++17); the header
// is free of casacore.
#include <string>

namespace spip::test {

// Copies `source` (correlations XX XY YX YY) to `out` keeping XX and YY, labelled
// RR and LL when `circular` (so that I = (RR + LL)/2 and V = (RR - LL)/2 hold the
// source's I and Q), else XX and YY. Every other column and subtable is copied as it is.
void copy_parallel_hands(const std::string& source, const std::string& out, bool circular);

}  // namespace spip::test
