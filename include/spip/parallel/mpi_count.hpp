#pragma once
// MPI counts and displacements are int: one beyond INT_MAX would wrap silently into a
// negative or short count. Everything that passes a size to MPI goes through this.
#include <climits>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace spip::parallel {

inline int mpi_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::length_error(std::string(what) + ": " + std::to_string(n) + " elements exceed MPI's int count");
  return static_cast<int>(n);
}

}  // namespace spip::parallel
