#pragma once
// One rank's channels as a stream: read in blocks ahead of the imaging (ChannelSource),
// staged one ahead into the imager (ChannelFeed), and written one behind it
// (ChannelWriter), each on a helper thread, so that reading, imaging and writing overlap.
#include <future>
#include <string>
#include <vector>

#include "spip/job/log.hpp"
#include "spip/job/plan.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/parallel/decomposition.hpp"
#include "spip/stages/channel_gather.hpp"
#include "spip/stages/imaging_stage.hpp"

namespace spip::pipeline {

// The rank's channels, read in blocks of channels that fit the memory budget. While a
// block is imaged, the next one is read on a reader thread (double buffering: at most
// two blocks in memory). Only one thread at a time uses the readers. `shares` (per
// input; empty: every row) are the rows a member of a group reads (rank_rows()).
class ChannelSource {
 public:
  ChannelSource(const Plan& plan, parallel::ChannelBlock mine, std::vector<std::vector<char>> shares)
      : plan_(plan), mine_(mine), shares_(std::move(shares)), block_channels_(plan.memory.block_channels) {}
  ~ChannelSource() {
    if (next_.valid()) next_.wait();
  }

  // The channels the run will ask for, ascending (a resumed run's are not every one):
  // reads ahead go to the block of the next of them. By default every channel.
  void want(std::vector<int> channels) { wanted_ = std::move(channels); }
  // Visibilities of one image channel (index into plan.band) from every input: per
  // input, its stored channels of the block of image channels that holds it. At most
  // two blocks are held: this one, and the next one read ahead.
  const std::vector<ms::VisBlock>& blocks_for(int channel, double& wait_s);

 private:
  std::vector<ms::VisBlock> read_block(int first) const;
  int next_wanted(int from) const;
  int block_end(int first) const { return std::min(mine_.end, first + block_channels_); }

  const Plan& plan_;
  parallel::ChannelBlock mine_;
  std::vector<std::vector<char>> shares_;
  std::vector<int> wanted_;
  int block_channels_ = 1;
  std::vector<ms::VisBlock> blocks_;
  int blocks_begin_ = -1;  // the image channels blocks_ holds: [blocks_begin_, block_end(blocks_begin_))
  std::future<std::vector<ms::VisBlock>> next_;
  int next_begin_ = -1;
};

// Feeds the rank's channels to the imager one ahead: while channel c is imaged, the
// next one is gathered from its block and staged by a helper thread (on the CPU with
// its imaging weights; on the GPU uploaded on the upload stream with its natural
// weights, from which the device makes the imaging weights). Only that thread uses the
// ChannelSource. In a mosaic each channel comes once per pointing, with the rows of that
// pointing's inputs alone, weighted on their own.
class ChannelFeed {
 public:
  // `group`: a group's collectives for this thread (the weighting's densities and the
  // channel's numbers are the whole channel's); null without a group.
  ChannelFeed(ChannelSource& source, ImagingStage& imaging, const Plan& plan, const RowCoordinates& coordinates,
              std::vector<int> channels, const imaging::RowGroup* group);
  ~ChannelFeed() {
    if (pending_.valid()) pending_.wait();
  }

  // Makes pointing p of channel c, the next of `channels` and its pointings, current in
  // the imager.
  ChannelStats advance(int c, int p);

 private:
  struct Item {
    int channel, pointing;
  };
  ChannelStats prepare(Item item);

  ChannelSource& source_;
  ImagingStage& imaging_;
  const Plan& plan_;
  const RowCoordinates& coordinates_;
  std::vector<Item> items_;
  const imaging::RowGroup* group_;
  int copy_threads_;
  std::size_t next_ = 0;
  std::future<ChannelStats> pending_;
};

// Finishes channels on a helper thread one channel behind: while channel k+1 is imaged,
// channel k's planes and then its progress marker are written. Tasks
// run one at a time in submission order, so a marker always follows its planes; only
// this thread writes the cubes meanwhile.
class ChannelWriter {
 public:
  ChannelWriter() = default;
  ChannelWriter(const ChannelWriter&) = delete;
  ChannelWriter& operator=(const ChannelWriter&) = delete;
  // Reached with a task pending only while another error unwinds the stack; that
  // error is the one reported, so the task's own is dropped.
  ~ChannelWriter() {
    if (pending_.valid()) pending_.wait();
  }

  template <class Task>
  void submit(Task task) {
    if (pending_.valid()) {
      const Stopwatch wait;
      pending_.get();
      waited_s_ += wait.seconds();
    }
    pending_ = std::async(std::launch::async, [this, task = std::move(task)]() mutable {
      const Stopwatch watch;
      task();
      busy_s_ += watch.seconds();
    });
  }
  // Waits for the last task and rethrows its error; the imaging has no more channels,
  // so this wait is not counted as time the imaging waited.
  void finish() {
    if (pending_.valid()) pending_.get();
  }
  // Time spent writing, and the part of it the imaging waited for.
  double busy_s() const { return busy_s_; }
  double waited_s() const { return waited_s_; }

 private:
  std::future<void> pending_;
  double busy_s_ = 0, waited_s_ = 0;
};

}  // namespace spip::pipeline
