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
  // (a profile of the pattern library on BERT-base). They are served from the heap, and up to
  // 32 MiB of freed memory is kept for reuse (1M-node graphs: peak RSS within
  // the run-to-run noise of 2-3%).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
#endif
  return graphrw::cli::main(argc, argv);
}
