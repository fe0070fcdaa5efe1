#pragma once
// The ranks that image the same channels together (parallel.ranks_per_channel): world
// ranks [g * size, (g + 1) * size), led by the first, each holding a share of every
// channel's rows. No MPI types here.
#include <memory>
#include <span>
#include <vector>

#include "spip/parallel/mpi_context.hpp"

namespace spip::parallel {

// Collective operations over one group, on a communicator of their own: calls on one
// object are ordered, so each thread that meets the group needs its own.
class GroupCollectives {
 public:
  ~GroupCollectives();
  GroupCollectives(const GroupCollectives&) = delete;
  GroupCollectives& operator=(const GroupCollectives&) = delete;

  bool leads() const { return member_ == 0; }
  // Element-wise sums, in place: reduced on the leader and broadcast, so that every
  // member holds the same bits (an all-reduce need not give them).
  void sum(std::span<float> values) const;
  void sum(std::span<double> values) const;
  double max(double value) const;
  bool any(bool value) const;
  // The leader's values on every member, in place.
  void from_leader(std::span<float> values) const;
  int from_leader(int value) const;
  std::vector<int> from_leader(std::vector<int> values) const;

 private:
  friend class RankGroup;
  struct Comm;
  GroupCollectives(std::unique_ptr<Comm> comm, int member);
  std::unique_ptr<Comm> comm_;
  int member_ = 0;
};

class RankGroup {
 public:
  // Collective over every rank; `size` must divide the number of ranks.
  RankGroup(const MpiContext& mpi, int size);
  int size() const { return size_; }
  int member() const { return member_; }
  bool leads() const { return member_ == 0; }
  // For the thread that images the current channel, and the one that stages the next.
  const GroupCollectives& imaging() const { return *imaging_; }
  const GroupCollectives& staging() const { return *staging_; }

 private:
  int size_ = 1, member_ = 0;
  std::unique_ptr<GroupCollectives> imaging_, staging_;
};

}  // namespace spip::parallel
