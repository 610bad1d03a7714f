// Copies byte ranges of an input file to an output file inside the kernel:
// the payload's pages never become resident in this process.
//
// copy_file_range (what cp uses) is fast only when the range sits at the same
// place in both files: the kernel splices it through a 64 KiB pipe, and when
// the output offset is not the input's (a rewritten graph moves every weight by
// a few bytes) each 64 KiB write starts and ends inside a page, so the output's
// page cache is built of small, partly written folios (400 MB of BERT-base's
// weights: 0.17-0.20 s misaligned, 0.12-0.15 s aligned). A copier with its own
// 256 KiB pipe splices the range in pieces that end on the output's 128 KiB
// boundaries (0.12-0.14 s whatever the offsets). Without that pipe (an output
// that is not a regular file, a pipe size refused) it falls back to
// copy_file_range, then sendfile, then a write from memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/wire.h"

namespace graphrw {

class FileCopier {
 public:
  explicit FileCopier(int out, std::string what);
  ~FileCopier();
  FileCopier(const FileCopier&) = delete;
  FileCopier& operator=(const FileCopier&) = delete;

  // Appends `size` bytes at `offset` of `in` at the output's position. `data`
  // is the same bytes in memory (a mapping of `in`), for the last fallback.
  void copy(int in, uint64_t offset, size_t size, const char* data);

  // The splice path's piece size (0: not used), for the tests.
  size_t chunk() const { return chunk_; }

 private:
  bool preparePipe();
  size_t splicePiece(int in, uint64_t& offset, size_t want);
  void classic(int in, uint64_t offset, size_t size, const char* data);

  int out_;
  std::string what_;
  int pipe_[2] = {-1, -1};
  size_t chunk_ = 0;
  bool tried_ = false;
};

// Writes `pieces` in order at `fd`'s position: file pieces of 64 KiB and
// more by a FileCopier, smaller ones read into a buffer with their small
// neighbours, memory by writev. Adjacent pieces are merged first (wire::coalesce).
// Exits with ExitCode::OutputFailed naming `what` when a write fails.
void writePieces(int fd, const std::vector<wire::Piece>& pieces, const std::string& what);

}  // namespace graphrw
