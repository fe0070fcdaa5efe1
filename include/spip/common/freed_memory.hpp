#pragma once
// Channel images, tens of MB each, are made and freed with every channel, and CLEAN's
// buffers with every cycle. glibc's adaptive thresholds reuse such a block, but give the
// top of the heap back to the kernel once twice that threshold lies free there, as it
// does when a channel's images are freed together; the next channel's are then faulted
// in a page at a time, on the thread that first writes them, mostly while the other
// threads wait. keep_freed_memory(), called by a rank before it images, keeps them in
// the process for reuse: on 8 channels of the realistic cleaned set (1024^2, 2 threads)
// a run took 13.8-14.3 s instead of 15.9-16.9 s, with 1.7 instead of 2.9 s in the
// kernel (docs/benchmarks.md, issue 46); a GPU rank, whose device images a channel
// faster than the faults can be taken, gains more. glibc allows it for blocks up to
// 32 MB (the most M_MMAP_THRESHOLD takes: a 1448^2 image in four Stokes parameters);
// larger ones are still mapped and unmapped. The top of the heap is given back only past
// the memory plan's kept_heap free, which the plan counts beside the process's own. That
// bounds what the heap keeps at its top, not the holes freed below a block still in use.
#include <malloc.h>

#include <algorithm>

namespace spip {

// glibc gives each thread that allocates (the reader, the writer, the OpenMP threads,
// MPI's) a heap of its own, and what one frees stays in that heap for that thread
// alone: at a budget of 0.6 GB a CPU rank's live heap peaked at 0.4 GB while its
// resident memory reached 0.85-0.95 GB. share_one_heap(), called before any thread
// starts, gives every thread the one heap (0.63-0.67 GB, for about 5 % more time:
// docs/benchmarks.md, issue 46). It holds for the whole process, GPU ranks included:
// glibc fixes the number of heaps the first time a second thread allocates, which MPI's
// threads do long before a rank knows its backend.
inline void share_one_heap() { mallopt(M_ARENA_MAX, 1); }

// The most freed memory the heap may keep for reuse: 256 MB (a few channels' images),
// or an eighth of a small budget. The memory plan grants less where the budget is tight.
inline constexpr double max_kept_heap_bytes = 256.0 * (1 << 20);
inline double kept_heap_bytes(double budget_bytes) { return std::min(max_kept_heap_bytes, budget_bytes / 8); }

// Nothing is kept where the plan grants nothing: glibc's adaptive thresholds then stay.
inline void keep_freed_memory(double kept_bytes) {
  if (kept_bytes < 1 << 20) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::min(kept_bytes, max_kept_heap_bytes)));
}

}  // namespace spip
