#include "driver/cli.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Folding weights allocates and frees buffers of a few MiB per node (a
  // [768, 2304] concatenation is 6.75 MiB). glibc serves them with fresh
  // mmap()s and returns freed heap tops to the kernel, so every one of them
  // page-faults again: on BERT-base's qkv-fusion that was half the run time
  // (docs/performance.md, issue 27). Serving them from the heap and keeping
  // up to 128 MiB of freed memory for reuse costs no extra peak RSS (the
  // peak has already been reached when memory is freed).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
  return graphrw::cli::main(argc, argv);
}
