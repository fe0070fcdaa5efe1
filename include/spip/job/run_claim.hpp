#pragma once
// One run at a time per output folder and prefix. Two runs that wrote the same cubes
// would mix their channels, and each would report its own settings for all of them.
// The claim is a file created with O_CREAT | O_EXCL, which holds across the nodes of a
// cluster file system (NFS, Lustre, BeeGFS), where flock and fcntl locks may be local
// to each node. It names the host, the process (with its start time, so that a reused
// process id is not taken for the holder), the start time of the run and its Slurm job.
#include <string>

namespace spip::pipeline {

class RunClaim {
 public:
  // Takes the claim `path` (ProductRegistry::claim) for `prefix`, creating its folder
  // if missing, or throws an InputError naming the folder and the holder. Cleared first: a claim of a process of this host
  // that is gone, one of an earlier start of this Slurm job (requeued), one that names
  // no holder ten minutes after it was made, and any claim when `break_claim` (the
  // user knows its holder is gone: a killed job of another node). `cleared` says what
  // was cleared ("" if nothing).
  RunClaim(const std::string& path, const std::string& prefix, bool break_claim, std::string& cleared);
  // Releases the claim if it is still this run's, and removes the folder if the claim
  // made it and nothing else was written there.
  ~RunClaim();
  RunClaim(const RunClaim&) = delete;
  RunClaim& operator=(const RunClaim&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  std::string text_;  // what this run wrote into it
  bool made_dir_ = false;
};

}  // namespace spip::pipeline
