#pragma once
// Channel images, tens of MB each, are made and freed with every channel. glibc's
// adaptive thresholds reuse such a block, but give the top of the heap back to the
// kernel once twice that threshold lies free there, as it does when a channel's images
// are freed together; the next channel's are then faulted in a page at a time, which on
// a virtual machine can take longer than a GPU takes to image the channel (one of the
// host-path changes of docs/benchmarks.md's issue-47 runs). keep_freed_memory(), called
// by a GPU rank before it images, keeps them in the process for reuse. A CPU rank, whose
// gridding outlasts the faults, does without: it would hold about 0.1 GB more at a
// budget of 0.6 GB (bench/run-budget-bench.sh). glibc allows it for blocks up to 32 MB
// (the most M_MMAP_THRESHOLD takes: a 1448^2 image in four Stokes parameters); larger
// ones are still mapped and unmapped. The top of a heap is given back only past 256 MB
// free, a few channels' images, so that a thread's heap keeps at most that much beyond
// what it holds.
#include <malloc.h>

namespace spip {

// glibc gives each thread that allocates (the reader, the writer, the OpenMP threads,
// MPI's) a heap of its own, and what one frees stays in that heap for that thread
// alone: at a budget of 0.6 GB a CPU rank's live heap peaked at 0.4 GB while its
// resident memory reached 0.85-0.95 GB. share_one_heap(), called before any thread
// starts, gives every thread the one heap (0.63-0.67 GB, for about 5 % more time:
// docs/benchmarks.md, issue 46); keep_freed_memory() lets threads started afterwards
// have their own again, which a GPU rank's staging threads are tuned for.
inline void share_one_heap() { mallopt(M_ARENA_MAX, 1); }

inline void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_ARENA_MAX, 0);  // glibc's default
}

}  // namespace spip
