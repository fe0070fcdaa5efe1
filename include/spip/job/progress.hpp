#pragma once
// What a killed run leaves for the next one: for each channel whose planes are in every
// partial cube (the restored ones may wait for the job's beam), a record of the numbers
// the later stages need (QA, noise, beam), and for each channel restored with the job's
// beam, its restored Stokes I peak. Beside them, what the channels were made from: the
// configuration, and each input's path, rows and table files (size and modification
// time). A run started again from the same settings and inputs resumes from them.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "spip/common/stopwatch.hpp"

namespace spip::pipeline {

// Whether a run may go on from the markers it found, and why, for the log.
struct ResumeDecision {
  bool resume = false;
  std::string reason;  // "" where there were no markers
  int channels_done = 0;  // markers found
};

// The markers are lines appended to one journal per rank (rank-NNNNNN.jsonl), not a
// file per channel: at 65,536 channels that was 131,072 files created and renamed in
// one folder, each a metadata operation a parallel file system serialises. A line is
// one JSON object, {"channel": N, "record": {...}} or {"channel": N, "restored_peak":
// x}; one that a kill cut short (no newline, or not JSON) is not read, so a marker is
// either whole or absent. Every journal of the folder counts, whichever rank wrote it,
// so a run may resume with other ranks; rank 0 reads them and hands them to the others
// (journals(), adopt()), so that the file system sees one reader. A channel marked
// twice (imaged again where its planes could not be read back) keeps the line read
// last, journals in the order of their names: both come from the same inputs and
// settings.
class ChannelProgress {
 public:
  // Markers in `dir` (ProductRegistry::progress_dir); `config_text`: the run's to_ini();
  // `inputs`: input_fingerprint() of its inputs; `rank`: whose journal this process writes.
  ChannelProgress(std::string dir, std::string config_text, std::string inputs, int rank);
  ~ChannelProgress();
  ChannelProgress(const ChannelProgress&) = delete;
  ChannelProgress& operator=(const ChannelProgress&) = delete;

  // Resume when the markers were made from the same inputs and from settings that
  // differ at most in ones that do not change the products (parallel.threads and
  // parallel.time_limit; input.ms and output.dir spelled differently), and every
  // partial cube they refer to still exists.
  ResumeDecision decide(const std::vector<std::string>& partial_cubes) const;
  // Rank 0, for a fresh run: forget earlier markers and record what the run is made from.
  void start_fresh() const;
  // The whole lines of every journal as this object read them (at decide() or the first
  // question; none once it adopted some), for the other ranks, which adopt() them; a
  // rank that adopted none reads the journals when first asked. A run's own markers are
  // never asked for.
  std::string journals() const;
  void adopt(const std::string& lines) const;
  bool done(int channel) const;
  // The marker's record (a ChannelMarker's JSON, qa.hpp).
  std::string record(int channel) const;
  // Appended to this rank's journal and handed to the kernel at once.
  void mark_done(int channel, const std::string& record) const;
  bool restored(int channel) const;
  double restored_peak(int channel) const;
  void mark_restored(int channel, double restored_peak) const;
  void remove() const;

 private:
  void load() const;
  void parse(const std::string& lines) const;
  void append(const std::string& line) const;
  std::string dir_;
  std::string config_text_;
  std::string inputs_;
  int rank_;
  mutable std::mutex mutex_;
  mutable bool loaded_ = false;
  mutable std::string lines_;  // as read, until adopt()
  mutable std::map<int, std::string> records_;
  mutable std::map<int, double> restored_;
  mutable std::FILE* journal_ = nullptr;
};

// A marker may be written only once its channel's planes are on disk, which takes a
// sync of every cube file. Syncing once per channel flushed each file once per channel
// (21 fsyncs a channel of the full set of cubes), which a parallel file system charges
// dearly for. So markers wait here for a sync that comes once `interval_s` has passed
// since the last, or at flush(); a killed run loses at most that much of a rank's work.
class Checkpoint {
 public:
  Checkpoint(std::function<void()> sync, double interval_s);
  // A run leaving on an error still marks the channels it wrote, where they can be synced.
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;
  // Writes `marker` after the next sync: at once if the interval has passed.
  void mark_after_sync(std::function<void()> marker);
  void flush();

 private:
  std::function<void()> sync_;
  double interval_s_;
  Stopwatch since_sync_;
  std::vector<std::function<void()>> waiting_;
};

// Each input's row count and canonical path, and the size and modification time of
// every file of its tables (the lock files excepted): what changes when the data are
// recalibrated, flagged or replaced, read without opening a table. The paths are not
// compared: an input moved, or staged to another disk, with its files' sizes and times
// kept is the same input (ChannelProgress::decide() says where it was). `files_read`:
// other files whose contents shape every channel (faraday.ionosphere, beam.fits), likewise.
std::string input_fingerprint(const std::vector<std::string>& ms_paths, const std::vector<std::int64_t>& rows,
                              const std::vector<std::string>& files_read = {});

}  // namespace spip::pipeline
