#include <kiln/host_memory.h>

#include <malloc.h>

namespace kiln {

void keepFreedHostMemory() {
  constexpr int kOneGiB = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kOneGiB);  // only buffers over 1 GiB get their own mapping
  mallopt(M_TRIM_THRESHOLD, kOneGiB);  // and the heap is not shrunk after each run
}

}  // namespace kiln
