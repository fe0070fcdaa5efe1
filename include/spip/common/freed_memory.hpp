#pragma once
// Channel images, tens of MB each, are made and freed with every channel. By default
// glibc gives such blocks back to the kernel when they are freed, and each new one is
// then faulted in a page at a time: three 16 MB images cost 20-25 ms that way on the
// 2-core development VM against 6-9 ms when reused, more than a GPU takes to image the
// channel. keep_freed_memory(), called first in main(), keeps them in the process for
// reuse. glibc allows it for blocks up to 32 MB (the most M_MMAP_THRESHOLD takes: a
// 1448^2 image in four Stokes parameters); larger ones are still mapped and unmapped.
// Resident memory then stays at its high-water mark between channels instead of
// falling below it.
#include <malloc.h>

#include <climits>

namespace spip {

inline void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

}  // namespace spip
