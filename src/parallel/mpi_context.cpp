#include "spip/parallel/mpi_context.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>

namespace spip::parallel {

MpiContext::MpiContext(int& argc, char**& argv) {
  int provided = 0;
  // Reader threads never call MPI; only the main thread does.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
}

MpiContext::~MpiContext() { MPI_Finalize(); }

void MpiContext::barrier() const { MPI_Barrier(MPI_COMM_WORLD); }

std::int64_t MpiContext::sum(std::int64_t local) const {
  std::int64_t total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

double MpiContext::max(double local) const {
  double result = 0;
  MPI_Allreduce(&local, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

std::vector<double> MpiContext::gather_to_root(const std::vector<double>& local) const {
  const int count = static_cast<int>(local.size());
  std::vector<int> counts(is_root() ? size_ : 0), offsets(is_root() ? size_ : 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> all;
  if (is_root()) {
    for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
    all.resize(static_cast<std::size_t>(offsets.back() + counts.back()));
  }
  MPI_Gatherv(local.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  return all;
}

std::vector<double> MpiContext::gather_to_all(const std::vector<double>& local) const {
  const int count = static_cast<int>(local.size());
  std::vector<int> counts(size_), offsets(size_, 0);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  std::vector<double> all(static_cast<std::size_t>(offsets.back() + counts.back()));
  MPI_Allgatherv(local.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
                 MPI_COMM_WORLD);
  return all;
}

void MpiContext::sum_all(std::vector<std::int64_t>& values) const {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

void MpiContext::abort(int exit_code) const {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

}  // namespace spip::parallel
