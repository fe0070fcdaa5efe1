#include "spip/parallel/mpi_context.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "spip/error.hpp"
#include "spip/parallel/mpi_count.hpp"

namespace spip::parallel {

MpiContext::MpiContext(int& argc, char**& argv) {
  int provided = 0;
  // The channel writer thread writes products with MPI-IO (FileWriter) while the
  // main thread communicates; reader threads never call MPI.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    SPIP_THROW(spip::Error, "this MPI library does not support MPI_THREAD_MULTIPLE, which spip needs to write its "
                            "products on a second thread (Open MPI 3 or later and MPICH 3 or later support it)");
  }
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

namespace {
// Offsets of each rank's part in a gathered whole, checked against MPI's int limit.
std::vector<int> offsets_of(const std::vector<int>& counts, const char* what) {
  std::vector<int> offsets(counts.size(), 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = mpi_count(total, what);
    total += static_cast<std::size_t>(counts[r]);
  }
  mpi_count(total, what);
  return offsets;
}

std::size_t total_of(const std::vector<int>& counts, const std::vector<int>& offsets) {
  return counts.empty() ? 0 : static_cast<std::size_t>(offsets.back()) + static_cast<std::size_t>(counts.back());
}
}  // namespace

std::vector<double> MpiContext::gather_to_root(const std::vector<double>& local) const {
  const int count = mpi_count(local.size(), "gather_to_root");
  std::vector<int> counts(is_root() ? size_ : 0), offsets;
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  offsets = offsets_of(counts, "gather_to_root");
  std::vector<double> all(total_of(counts, offsets));
  MPI_Gatherv(local.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  return all;
}

std::vector<std::string> MpiContext::gather_text_to_root(const std::string& local) const {
  const int count = mpi_count(local.size(), "gather_text_to_root");
  std::vector<int> counts(is_root() ? size_ : 0), offsets;
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  offsets = offsets_of(counts, "gather_text_to_root");
  std::string all(total_of(counts, offsets), '\0');
  MPI_Gatherv(local.data(), count, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> texts;
  for (std::size_t r = 0; r < counts.size(); ++r) texts.push_back(all.substr(offsets[r], counts[r]));
  return texts;
}

std::string MpiContext::broadcast_text(const std::string& from_root) const {
  std::uint64_t length = is_root() ? from_root.size() : 0;
  MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  std::string text = is_root() ? from_root : std::string(length, '\0');
  MPI_Bcast(text.data(), mpi_count(length, "broadcast_text"), MPI_CHAR, 0, MPI_COMM_WORLD);
  return text;
}

std::vector<double> MpiContext::gather_to_all(const std::vector<double>& local) const {
  const int count = mpi_count(local.size(), "gather_to_all");
  std::vector<int> counts(size_);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  const std::vector<int> offsets = offsets_of(counts, "gather_to_all");
  std::vector<double> all(total_of(counts, offsets));
  MPI_Allgatherv(local.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
                 MPI_COMM_WORLD);
  return all;
}

void MpiContext::sum_all(std::vector<std::int64_t>& values) const {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), mpi_count(values.size(), "sum_all"), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

std::vector<float> MpiContext::all_to_all(const std::vector<float>& send, const std::vector<std::size_t>& send_units,
                                          const std::vector<std::size_t>& receive_units, std::size_t unit) const {
  const auto to_int = [](std::size_t units) { return mpi_count(units, "all_to_all"); };
  std::vector<int> send_counts(size_), send_offsets(size_, 0), receive_counts(size_), receive_offsets(size_, 0);
  for (int r = 0; r < size_; ++r) {
    send_counts[r] = to_int(send_units[r]);
    receive_counts[r] = to_int(receive_units[r]);
    if (r > 0) {
      send_offsets[r] = to_int(static_cast<std::size_t>(send_offsets[r - 1]) + send_units[r - 1]);
      receive_offsets[r] = to_int(static_cast<std::size_t>(receive_offsets[r - 1]) + receive_units[r - 1]);
    }
  }
  std::vector<float> received(
      (static_cast<std::size_t>(receive_offsets.back()) + receive_units.back()) * unit);
  MPI_Datatype block;
  MPI_Type_contiguous(to_int(std::max<std::size_t>(unit, 1)), MPI_FLOAT, &block);
  MPI_Type_commit(&block);
  MPI_Alltoallv(send.data(), send_counts.data(), send_offsets.data(), block, received.data(), receive_counts.data(),
                receive_offsets.data(), block, MPI_COMM_WORLD);
  MPI_Type_free(&block);
  return received;
}

MpiContext::NodeShare MpiContext::share_on_node(int resource, const std::function<std::uint64_t()>& measure) const {
  MPI_Comm node = MPI_COMM_NULL, sharers = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_split(node, resource >= 0 ? resource : MPI_UNDEFINED, rank_, &sharers);
  MPI_Comm_free(&node);
  NodeShare share;
  if (sharers == MPI_COMM_NULL) {
    share.amount = measure();
    return share;
  }
  int position = 0;
  MPI_Comm_rank(sharers, &position);
  MPI_Comm_size(sharers, &share.ranks);
  MPI_Barrier(sharers);  // every sharer has made what it holds before the measure
  if (position == 0) share.amount = measure();
  MPI_Bcast(&share.amount, 1, MPI_UINT64_T, 0, sharers);
  MPI_Comm_free(&sharers);
  return share;
}

namespace {
// A tag no collective uses: point-to-point traffic of spip is the stop notice alone.
constexpr int stop_tag = 7501;
}  // namespace

struct StopNotice::Pending {
  std::vector<MPI_Request> sends;
  char token = 1;
};

StopNotice::StopNotice(const MpiContext& mpi)
    : mpi_(mpi), pending_(std::make_unique<Pending>()), heard_from_(static_cast<std::size_t>(mpi.size()), false) {}

StopNotice::~StopNotice() {
  // After agree() every announcement has been received and the sends complete. Without
  // it the job is failing and about to abort: waiting here could hang, so only test.
  int complete = 0;
  if (!pending_->sends.empty())
    MPI_Testall(mpi_count(pending_->sends.size(), "StopNotice"), pending_->sends.data(), &complete, MPI_STATUSES_IGNORE);
}

void StopNotice::announce() {
  if (announced_) return;
  announced_ = true;
  for (int r = 0; r < mpi_.size(); ++r) {
    if (r == mpi_.rank()) continue;
    pending_->sends.emplace_back();
    MPI_Isend(&pending_->token, 1, MPI_CHAR, r, stop_tag, MPI_COMM_WORLD, &pending_->sends.back());
  }
}

bool StopNotice::heard() {
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, stop_tag, MPI_COMM_WORLD, &arrived, &status);
    if (!arrived) break;
    char token = 0;
    MPI_Recv(&token, 1, MPI_CHAR, status.MPI_SOURCE, stop_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    heard_from_[static_cast<std::size_t>(status.MPI_SOURCE)] = true;
  }
  return std::find(heard_from_.begin(), heard_from_.end(), true) != heard_from_.end();
}

bool StopNotice::agree(bool stop) {
  // Every rank learns who announced, then takes the announcements still on their way.
  std::vector<int> announced(static_cast<std::size_t>(mpi_.size()), 0);
  const int mine = announced_ ? 1 : 0;
  MPI_Allgather(&mine, 1, MPI_INT, announced.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < mpi_.size(); ++r) {
    if (r == mpi_.rank() || !announced[static_cast<std::size_t>(r)] || heard_from_[static_cast<std::size_t>(r)]) continue;
    char token = 0;
    MPI_Recv(&token, 1, MPI_CHAR, r, stop_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    heard_from_[static_cast<std::size_t>(r)] = true;
  }
  const bool any_announced = std::find(announced.begin(), announced.end(), 1) != announced.end();
  return mpi_.max(stop || any_announced ? 1.0 : 0.0) > 0;
}

void MpiContext::abort(int exit_code) const {
  // Alone there are no peers to stop, and MPI_Abort would print Open MPI's nine-line
  // banner under the one-line error; a process that MPI_Finalize might hang in (another
  // thread inside MPI-IO) leaves at once instead.
  if (size_ == 1) {
    std::fflush(nullptr);
    std::_Exit(exit_code);
  }
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

}  // namespace spip::parallel
