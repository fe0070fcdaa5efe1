#pragma once
// One run at a time per output folder and prefix. Two runs that wrote the same cubes
// would mix their channels, and each would report its own settings for all of them.
// The claim is a file created with O_CREAT | O_EXCL, which holds across the nodes of a
// cluster file system (NFS, Lustre, BeeGFS), where flock and fcntl locks may be local
// to each node. It names the host, the process and the start time of its holder.
#include <string>

namespace spip::pipeline {

class RunClaim {
 public:
  // Takes the claim on `dir` (created if missing) for `prefix`, or throws an InputError
  // naming the folder and the holder. A claim left by a process of this host that is
  // gone, or by an earlier start of this Slurm job (requeued), is cleared first, and so
  // is any claim when `break_claim` (the user knows its holder is gone: a killed job
  // of another node). `cleared` tells the caller what was
  // cleared ("" if nothing).
  RunClaim(const std::string& dir, const std::string& prefix, bool break_claim, std::string& cleared);
  ~RunClaim();  // releases it
  RunClaim(const RunClaim&) = delete;
  RunClaim& operator=(const RunClaim&) = delete;

  const std::string& path() const { return path_; }
  static std::string path_for(const std::string& dir, const std::string& prefix);

 private:
  std::string path_;
};

}  // namespace spip::pipeline
