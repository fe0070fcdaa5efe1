#include "spip/parallel/rank_group.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <string>

#include "spip/error.hpp"
#include "spip/parallel/mpi_count.hpp"

namespace spip::parallel {

struct GroupCollectives::Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  ~Comm() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

namespace {

// MPI counts are int: a 16384^2 image set of four Stokes parameters goes in pieces.
template <class T, class Op>
void in_pieces(std::span<T> values, Op op) {
  constexpr std::size_t piece = std::size_t{1} << 28;
  for (std::size_t done = 0; done < values.size(); done += piece)
    op(values.data() + done, static_cast<int>(std::min(piece, values.size() - done)));
}

template <class T>
void reduce_and_share(std::span<T> values, MPI_Datatype type, MPI_Op op, bool leads, MPI_Comm comm) {
  in_pieces(values, [&](T* data, int count) {
    MPI_Reduce(leads ? MPI_IN_PLACE : data, leads ? data : nullptr, count, type, op, 0, comm);
    MPI_Bcast(data, count, type, 0, comm);
  });
}

}  // namespace

GroupCollectives::GroupCollectives(std::unique_ptr<Comm> comm, int member) : comm_(std::move(comm)), member_(member) {}
GroupCollectives::~GroupCollectives() = default;

void GroupCollectives::sum(std::span<float> values) const {
  reduce_and_share(values, MPI_FLOAT, MPI_SUM, leads(), comm_->comm);
}

void GroupCollectives::sum(std::span<double> values) const {
  reduce_and_share(values, MPI_DOUBLE, MPI_SUM, leads(), comm_->comm);
}

double GroupCollectives::max(double value) const {
  reduce_and_share(std::span(&value, 1), MPI_DOUBLE, MPI_MAX, leads(), comm_->comm);
  return value;
}

bool GroupCollectives::any(bool value) const {
  int flag = value ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_LOR, comm_->comm);
  return flag != 0;
}

void GroupCollectives::from_leader(std::span<float> values) const {
  in_pieces(values, [&](float* data, int count) { MPI_Bcast(data, count, MPI_FLOAT, 0, comm_->comm); });
}

int GroupCollectives::from_leader(int value) const {
  MPI_Bcast(&value, 1, MPI_INT, 0, comm_->comm);
  return value;
}

std::vector<int> GroupCollectives::from_leader(std::vector<int> values) const {
  values.resize(static_cast<std::size_t>(from_leader(mpi_count(values.size(), "from_leader"))));
  MPI_Bcast(values.data(), mpi_count(values.size(), "from_leader"), MPI_INT, 0, comm_->comm);
  return values;
}

RankGroup::RankGroup(const MpiContext& mpi, int size) : size_(size), member_(mpi.rank() % std::max(size, 1)) {
  if (size < 1 || mpi.size() % size != 0)
    SPIP_THROW(spip::Error, "a group of " + std::to_string(size) + " ranks does not divide " +
                                std::to_string(mpi.size()) + " ranks");
  auto imaging = std::make_unique<GroupCollectives::Comm>();
  MPI_Comm_split(MPI_COMM_WORLD, mpi.rank() / size, mpi.rank(), &imaging->comm);
  auto staging = std::make_unique<GroupCollectives::Comm>();
  MPI_Comm_dup(imaging->comm, &staging->comm);
  imaging_.reset(new GroupCollectives(std::move(imaging), member_));
  staging_.reset(new GroupCollectives(std::move(staging), member_));
}

}  // namespace spip::parallel
