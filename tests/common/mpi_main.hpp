#pragma once
// The main() of a test run under mpiexec (spip_test_mpi_main): the MPI world for the
// tests, and a failure on any rank fails the test.
#include "spip/parallel/mpi_context.hpp"

namespace spip::test {
// Set by main() before any test runs.
extern const spip::parallel::MpiContext* world;
}
