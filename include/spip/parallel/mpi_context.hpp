#pragma once
// The MPI world of one spip run (the only room that calls MPI; no MPI types here).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace spip::parallel {

class MpiContext {
 public:
  MpiContext(int& argc, char**& argv);
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the processes of this node
  int local_size() const { return local_size_; }
  bool is_root() const { return rank_ == 0; }

  void barrier() const;
  std::int64_t sum(std::int64_t local) const;
  double max(double local) const;
  // Concatenates every rank's values on rank 0 in rank order (other ranks get {}).
  std::vector<double> gather_to_root(const std::vector<double>& local) const;
  // Every rank's text on rank 0, in rank order (other ranks get {}).
  std::vector<std::string> gather_text_to_root(const std::string& local) const;
  // Rank 0's text on every rank (a path that rank 0 chose, say).
  std::string broadcast_text(const std::string& from_root) const;
  // Concatenates every rank's values on every rank, in rank order.
  std::vector<double> gather_to_all(const std::vector<double>& local) const;
  // Element-wise sum of every rank's values, on every rank.
  void sum_all(std::vector<std::int64_t>& values) const;
  // Collective personalised exchange (MPI_Alltoallv) in units of `unit` floats (an image
  // row, say), so that counts stay far below MPI's int limit: `send` holds
  // send_units[d] units for each rank d in rank order, and the result receive_units[s]
  // units from each rank s in rank order.
  std::vector<float> all_to_all(const std::vector<float>& send, const std::vector<std::size_t>& send_units,
                                const std::vector<std::size_t>& receive_units, std::size_t unit) const;
  // Collective. The ranks of this node that name the same non-negative `resource` (a
  // GPU, by its PCI address) wait for each other; then the lowest-ranked of them calls
  // `measure` (its free memory, say) and each learns that amount and how many share it,
  // so that none takes what another counted on. A negative resource shares with no one.
  struct NodeShare {
    std::uint64_t amount = 0;
    int ranks = 1;
    std::uint64_t each() const { return amount / static_cast<std::uint64_t>(ranks); }
  };
  NodeShare share_on_node(int resource, const std::function<std::uint64_t()>& measure) const;
  // Ends every rank of the job at once; for failures that other ranks cannot see.
  [[noreturn]] void abort(int exit_code) const;

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

// A stop that one rank decides on its own (it was signalled) and the others learn of
// between their own units of work, without a collective call that ranks with unequal
// work would reach at different times.
class StopNotice {
 public:
  explicit StopNotice(const MpiContext& mpi);
  ~StopNotice();
  StopNotice(const StopNotice&) = delete;
  StopNotice& operator=(const StopNotice&) = delete;

  // Tells every other rank; a second call does nothing.
  void announce();
  // True once any other rank has announced; never blocks.
  bool heard();
  // Collective: true on every rank when any rank announced, or `stop` is true on any
  // rank. Receives every announcement, so that none is left in flight at the end.
  bool agree(bool stop);

 private:
  struct Pending;
  const MpiContext& mpi_;
  std::unique_ptr<Pending> pending_;
  bool announced_ = false;
  std::vector<bool> heard_from_;
};

}  // namespace spip::parallel
