#include "io/file_copy.h"

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include "io/atomic_file.h"
#include "io/fault.h"
#include "support/error.h"

namespace graphrw {
namespace {

// Below this a piece goes through copy_file_range: two splices cost more than
// the misaligned pages they would save.
constexpr size_t kMinSplice = 256 * 1024;
constexpr size_t kPipeBytes = 256 * 1024;

// File pieces under this size are read into a buffer and written with their
// small neighbours, 1 MiB a write: a kernel copy costs 15-20 us a call
// whatever its size (a folded Concat's 3 KiB rows: 27,648 of them in
// BERT-base's qkv weights took 0.5 s as copy_file_range calls).
constexpr size_t kSmallFilePiece = 64 * 1024, kStaging = 1 << 20;

[[noreturn]] void shrank(const std::string& what) {
  fail(ExitCode::OutputFailed, what + ": the input file shrank while being copied");
}

// Reads `size` bytes at `offset` of the input `fd` through the descriptor: no
// page of the mapping is touched (nor faulted in past a shrunk file's end).
void readAt(int fd, uint64_t offset, char* out, size_t size, const std::string& what) {
  if (readAllAt(fd, out, size, offset)) return;
  if (errno == 0) shrank(what);
  fail(ExitCode::OutputFailed, what + ": cannot read the input: " + std::strerror(errno));
}

// Fills `staging` with the run of small pieces from `i` on (at least one); returns where it stopped.
size_t stageSmall(const std::vector<wire::Piece>& pieces, size_t i, std::vector<char>& staging, size_t& used,
                  const std::string& what) {
  staging.resize(kStaging);
  used = 0;
  for (; i < pieces.size(); ++i) {
    const wire::Piece& p = pieces[i];
    if (p.size >= (p.file ? kSmallFilePiece : 4096) || used + p.size > kStaging) break;
    if (p.file)
      readAt(p.file->fd(), p.offset, staging.data() + used, p.size, what);
    else
      std::memcpy(staging.data() + used, p.data, p.size);
    used += p.size;
  }
  return i;
}

// Where copy_file_range is as fast or faster: its 64 KiB splices then end on
// the output's 64 KiB boundaries (measured on ext4: 0.12 s for 400 MB at input
// and output offsets 0/0, 100/100, 4096/0, 0/65536; 0.17-0.20 s at 4096/4096,
// 9750/100), or both offsets are on a block, where a file system that shares
// extents (XFS, Btrfs) clones the range instead of copying it.
bool copyRangeSuits(uint64_t in, uint64_t out) {
  return out % 65536 == in % 4096 || (in % 4096 == 0 && out % 4096 == 0);
}

}  // namespace

FileCopier::FileCopier(int out, std::string what) : out_(out), what_(std::move(what)) {}

FileCopier::~FileCopier() {
  for (int fd : pipe_)
    if (fd >= 0) close(fd);
}

bool FileCopier::preparePipe() {
  if (tried_) return chunk_ != 0;
  tried_ = true;
  struct stat st {};
  if (fstat(out_, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (pipe2(pipe_, O_CLOEXEC) != 0) return false;  // copy() asks the position (lseek) per range
  // A piece of `chunk` bytes at any input offset takes chunk / 4096 + 1 pipe
  // slots: half the pipe. 128 KiB pieces, not larger: the output's page cache
  // is then built of 128 KiB folios; 512 KiB ones were as fast in a steady
  // state but took 0.4-1 s instead of 0.12 s for 400 MB now and then, right
  // after another large file was deleted (the kernel's higher-order
  // allocations). A user past pipe-user-pages-soft gets no such pipe.
  if (fcntl(pipe_[1], F_SETPIPE_SZ, kPipeBytes) >= static_cast<int>(kPipeBytes)) chunk_ = kPipeBytes / 2;
  if (!chunk_) {
    for (int& fd : pipe_) close(std::exchange(fd, -1));
    return false;
  }
  return true;
}

// Moves `want` bytes at `offset` through the pipe to the output. Returns what
// it moved: less than `want` only when the kernel cannot splice these files,
// and then the pipe is empty again and the caller goes on without it.
size_t FileCopier::splicePiece(int in, uint64_t& offset, size_t want) {
  size_t queued = 0;
  while (queued < want) {
    auto at = static_cast<loff_t>(offset);
    ssize_t n = splice(in, &at, pipe_[1], nullptr, want - queued, SPLICE_F_MOVE);
    if (n == 0) shrank(what_);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (queued == 0) return 0;  // e.g. an input file system without splice
      break;
    }
    offset += static_cast<uint64_t>(n);
    queued += static_cast<size_t>(n);
  }
  size_t moved = 0;
  while (moved < queued) {
    ssize_t n = splice(pipe_[0], nullptr, out_, nullptr, queued - moved, SPLICE_F_MOVE);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // What is left in the pipe goes out by write, which reports a full disk
      // like every other write; an output that only refused splice goes on.
      std::vector<char> rest(queued - moved);
      size_t got = 0;
      while (got < rest.size()) {
        ssize_t r = read(pipe_[0], rest.data() + got, rest.size() - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) fail(ExitCode::Internal, what_ + ": cannot read back the copy pipe");
        got += static_cast<size_t>(r);
      }
      writeAll(out_, rest.data(), rest.size(), what_);
      chunk_ = 0;
      return queued;
    }
    moved += static_cast<size_t>(n);
    fault::wrote(static_cast<size_t>(n));
  }
  return queued;
}

void FileCopier::copy(int in, uint64_t offset, size_t size, const char* data) {
  if (size >= kMinSplice && preparePipe()) {
    // The output's position: the writer's own writes move it between pieces.
    off_t at = lseek(out_, 0, SEEK_CUR);
    if (at < 0) chunk_ = 0;
    auto position = static_cast<uint64_t>(std::max<off_t>(at, 0));
    while (size > 0 && chunk_ && !copyRangeSuits(offset, position)) {
      size_t want = std::min(size, chunk_ - static_cast<size_t>(position % chunk_));
      size_t moved = splicePiece(in, offset, want);
      if (moved == 0) {
        chunk_ = 0;
        break;
      }
      if (data) data += moved;  // null when the caller has no mapping (the tests)
      size -= moved;
      position += moved;
    }
    if (size == 0) return;
  }
  classic(in, offset, size, data);
}

// copy_file_range, else sendfile (e.g. to a pipe), else a write from memory.
void FileCopier::classic(int in, uint64_t start, size_t size, const char* data) {
  auto offset = static_cast<off_t>(start);
  size_t left = size;
  bool useCopyRange = true, useSendfile = true;
  while (left > 0) {
    ssize_t n = -1;
    if (useCopyRange) {
      n = copy_file_range(in, &offset, out_, nullptr, left, 0);
      if (n < 0 && errno != EINTR) useCopyRange = false;
    } else if (useSendfile) {
      n = sendfile(out_, in, &offset, left);
      if (n < 0 && errno != EINTR) useSendfile = false;
    } else {
      writeAll(out_, data + (size - left), left, what_);
      return;
    }
    if (n == 0) shrank(what_);
    if (n > 0) {
      left -= static_cast<size_t>(n);
      fault::wrote(static_cast<size_t>(n));
    }
  }
}

void writePieces(int fd, const std::vector<wire::Piece>& given, const std::string& what) {
  const std::vector<wire::Piece> pieces = wire::coalesce(given);
  FileCopier copier(fd, what);
  std::vector<iovec> iov;
  iov.reserve(std::min<size_t>(pieces.size(), IOV_MAX));
  std::vector<char> staging;
  size_t i = 0;
  while (i < pieces.size()) {
    if (const auto& p = pieces[i]; p.file && p.size >= kSmallFilePiece) {
      copier.copy(p.file->fd(), p.offset, p.size, p.data);
      ++i;
      continue;
    } else if (p.file) {
      size_t used = 0;
      i = stageSmall(pieces, i, staging, used, what);
      writeAll(fd, staging.data(), used, what);
      continue;
    }
    iov.clear();
    size_t batchBytes = 0;
    for (; i < pieces.size() && !pieces[i].file && iov.size() < IOV_MAX && batchBytes < (1u << 30); ++i) {
      iov.push_back({const_cast<char*>(pieces[i].data), pieces[i].size});
      batchBytes += pieces[i].size;
    }
    size_t k = 0;
    while (k < iov.size()) {
      ssize_t n = writev(fd, iov.data() + k, static_cast<int>(std::min<size_t>(iov.size() - k, IOV_MAX)));
      if (n < 0) {
        if (errno == EINTR) continue;
        fail(ExitCode::OutputFailed,
             what + ": write failed: " +
                 (errno == ENOSPC ? std::string("no space left on the device (disk full)") : std::strerror(errno)));
      }
      fault::wrote(static_cast<size_t>(n));
      auto left = static_cast<size_t>(n);
      while (k < iov.size() && left >= iov[k].iov_len) left -= iov[k++].iov_len;
      if (k < iov.size() && left > 0) {
        iov[k].iov_base = static_cast<char*>(iov[k].iov_base) + left;
        iov[k].iov_len -= left;
      }
    }
  }
}

}  // namespace graphrw
