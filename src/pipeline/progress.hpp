#pragma once
// What a killed run leaves for the next one: a marker per channel whose planes are in
// every partial cube (the restored ones may wait for the job's beam), holding the
// numbers the later stages need (QA, noise, beam), and one per channel restored with
// the job's beam, holding its restored Stokes I peak. A run started again with the
// same configuration resumes from them.
#include <string>
#include <vector>

namespace spip::pipeline {

class ChannelProgress {
 public:
  ChannelProgress(const std::string& output_dir, const std::string& prefix, std::string config_text);

  // True when the markers were made by the same configuration and every partial cube
  // they refer to still exists.
  bool resumable(const std::vector<std::string>& partial_cubes) const;
  // Rank 0, for a fresh run: forget earlier markers and record the configuration.
  void start_fresh() const;
  bool done(int channel) const;
  std::vector<double> record(int channel) const;
  // Written under a temporary name and renamed: a marker is either complete or absent.
  void mark_done(int channel, const std::vector<double>& record) const;
  bool restored(int channel) const;
  double restored_peak(int channel) const;
  void mark_restored(int channel, double restored_peak) const;
  void remove() const;

 private:
  std::string marker(int channel) const;
  std::string restored_marker(int channel) const;
  std::string dir_;
  std::string config_text_;
};

}  // namespace spip::pipeline
