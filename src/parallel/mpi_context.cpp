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

void MpiContext::sum_to_root(std::vector<double>& values) const {
  // MPI counts are int: reduce in pieces so that images of any size fit.
  constexpr std::size_t piece = std::size_t{1} << 28;
  for (std::size_t first = 0; first < values.size(); first += piece) {
    const int count = static_cast<int>(std::min(piece, values.size() - first));
    if (is_root())
      MPI_Reduce(MPI_IN_PLACE, values.data() + first, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else
      MPI_Reduce(values.data() + first, nullptr, count, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  }
}

std::vector<std::complex<float>> MpiContext::all_to_all(const std::vector<std::complex<float>>& send,
                                                        const std::vector<int>& send_counts, int block) const {
  // Counts and offsets are in blocks of `block` values (e.g. image rows), so that they
  // stay within int for cubes of billions of values.
  MPI_Datatype block_type;
  MPI_Type_contiguous(block, MPI_C_FLOAT_COMPLEX, &block_type);
  MPI_Type_commit(&block_type);
  std::vector<int> receive_counts(size_), send_offsets(size_, 0), receive_offsets(size_, 0);
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < size_; ++r) {
    send_offsets[r] = send_offsets[r - 1] + send_counts[r - 1];
    receive_offsets[r] = receive_offsets[r - 1] + receive_counts[r - 1];
  }
  std::vector<std::complex<float>> receive(static_cast<std::size_t>(receive_offsets.back() + receive_counts.back()) *
                                           static_cast<std::size_t>(block));
  MPI_Alltoallv(send.data(), send_counts.data(), send_offsets.data(), block_type, receive.data(),
                receive_counts.data(), receive_offsets.data(), block_type, MPI_COMM_WORLD);
  MPI_Type_free(&block_type);
  return receive;
}

void MpiContext::abort(int exit_code) const {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

}  // namespace spip::parallel
