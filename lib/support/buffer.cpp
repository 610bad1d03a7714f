#include "support/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include <spdlog/spdlog.h>

#include "support/error.h"

namespace graphrw {
namespace {

// An owned file descriptor, closed when dropped; release() hands it on.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// A descriptor several buffers may map parts of (a model, a spill file).
using SharedFd = std::shared_ptr<Fd>;
SharedFd share(Fd& f) { return std::make_shared<Fd>(f.release()); }

// `size` bytes of a file from `fileOffset` (page-aligned), mapped read-only.
class MappedBuffer final : public Buffer {
 public:
  // spilled: the range is the buffer's own (a spill file's); its blocks are
  // given back to the file system when the buffer goes.
  MappedBuffer(void* base, size_t size, SharedFd fd, uint64_t fileOffset = 0, bool spilled = false)
      : base_(base), fd_(std::move(fd)), fileOffset_(fileOffset), spilled_(spilled) {
    data_ = static_cast<const char*>(base);
    size_ = size;
  }
  ~MappedBuffer() override {
    if (base_ != nullptr) munmap(base_, size_);
    if (spilled_) {
      auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
      uint64_t length = (size_ + page - 1) / page * page;  // the next payload starts on a later page
      fallocate(fd_->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(fileOffset_),
                static_cast<off_t>(length));  // a file system without holes keeps the blocks until exit
    }
  }
  int fd() const override { return fd_->fd; }
  uint64_t fileOffset() const override { return fileOffset_; }
  bool equalAt(uint64_t offset, const char* bytes, size_t size) const override {
    if (offset > size_ || size > size_ - offset) return false;
    char chunk[1 << 14];
    while (size > 0) {
      size_t n = std::min(size, sizeof chunk);
      if (!readAllAt(fd_->fd, chunk, n, fileOffset_ + offset))
        return Buffer::equalAt(offset, bytes, size);  // the descriptor failed: read the mapping
      if (std::memcmp(chunk, bytes, n) != 0) return false;
      offset += n;
      bytes += n;
      size -= n;
    }
    return true;
  }
  void copyOut(const char* p, size_t size, char* out) const override {
    if (!readAllAt(fd_->fd, out, size, fileOffset_ + static_cast<uint64_t>(p - data_)))
      Buffer::copyOut(p, size, out);  // the descriptor failed: read the mapping
  }
  // Page-cache folios are mapped whole on a fault (128 KiB and more on recent
  // kernels), so a scan that reads a few header bytes per tensor would make
  // most of the file resident; passed ranges are dropped every 16 MiB. A call
  // well behind the last drop starts a new scan (the loader reads the main
  // graph's nodes a second time): it drops from there on.
  void releaseBefore(const char* p) const override {
    constexpr size_t kStep = 16u << 20, kMargin = 1u << 20;
    if (p < data_ || p > data_ + size_) return;
    size_t upTo = static_cast<size_t>(p - data_);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (upTo + kStep < released_) {
      released_ = upTo / page * page;
      return;
    }
    if (upTo < released_ + kStep + kMargin) return;
    size_t end = (upTo - kMargin) / page * page;
    if (end <= released_) return;
    madvise(static_cast<char*>(base_) + released_, end - released_, MADV_DONTNEED);
    released_ = end;
  }

 private:
  void* base_;
  SharedFd fd_;
  uint64_t fileOffset_;
  bool spilled_;
  mutable size_t released_ = 0;  // page-aligned: [0, released_) was dropped
};

class OwnedBuffer final : public Buffer {
 public:
  explicit OwnedBuffer(std::string bytes) : bytes_(std::move(bytes)) {
    data_ = bytes_.data();
    size_ = bytes_.size();
  }

 private:
  std::string bytes_;
};

}  // namespace

bool Buffer::equalAt(uint64_t offset, const char* bytes, size_t size) const {
  if (offset > size_ || size > size_ - offset) return false;
  return size == 0 || std::memcmp(data_ + offset, bytes, size) == 0;
}

void Buffer::copyOut(const char* p, size_t size, char* out) const {
  if (size > 0) std::memcpy(out, p, size);
}

namespace {

[[noreturn]] void tooLarge(const std::string& what, size_t maxBytes) {
  badInput(what + ": larger than " + std::to_string(maxBytes) + " bytes (" + std::to_string(maxBytes >> 20) +
           " MiB), more than a protobuf message holds");
}

}  // namespace

std::shared_ptr<const Buffer> Buffer::mapFile(const std::filesystem::path& path, size_t maxBytes) {
  Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) badInput(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(f.fd, &st) != 0) badInput(path.string() + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return spoolFd(f.fd, path.string(), maxBytes);
  size_t size = static_cast<size_t>(st.st_size);
  if (size > maxBytes) tooLarge(path.string(), maxBytes);
  if (size == 0) return std::make_shared<OwnedBuffer>(std::string());
  void* base = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (base == MAP_FAILED) badInput(path.string() + ": cannot map: " + std::strerror(errno));
  return std::make_shared<MappedBuffer>(base, size, share(f));  // the buffer owns the descriptor now
}

std::shared_ptr<const Buffer> Buffer::readFd(int fd, const std::string& what) {
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      badInput(what + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    bytes.append(chunk, static_cast<size_t>(n));
  }
  return std::make_shared<OwnedBuffer>(std::move(bytes));
}

namespace {

// An unlinked temporary file in $TMPDIR (else /tmp), open read-write.
int unlinkedTempFile(const std::string& what) {
  const char* env = std::getenv("TMPDIR");
  std::string dir = env && *env ? env : "/tmp";
  int fd = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string name = dir + "/graphrw-stdin-XXXXXX";  // file systems without O_TMPFILE
  fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) badInput(what + ": cannot create a temporary file in " + dir + ": " + std::strerror(errno));
  unlink(name.c_str());
  return fd;
}

}  // namespace

std::shared_ptr<const Buffer> Buffer::spoolFd(int fd, const std::string& what, size_t maxBytes) {
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0) {
    if (static_cast<size_t>(st.st_size) > maxBytes) tooLarge(what, maxBytes);
    Fd own{dup(fd)};  // stdin redirected from a file: map it
    if (own.fd >= 0 && st.st_size > 0) {
      void* base = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, own.fd, 0);
      if (base != MAP_FAILED) {
        return std::make_shared<MappedBuffer>(base, static_cast<size_t>(st.st_size), share(own));
      }
    }
  }
  Fd tmp{unlinkedTempFile(what)};
  std::string chunk(1 << 20, '\0');
  size_t total = 0;
  for (;;) {
    ssize_t n = read(fd, chunk.data(), chunk.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      badInput(what + ": read failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(tmp.fd, chunk.data() + done, static_cast<size_t>(n - done));
      if (w < 0) {
        if (errno == EINTR) continue;
        badInput(what + ": cannot spool to a temporary file: " + std::strerror(errno));
      }
      done += w;
    }
    total += static_cast<size_t>(n);
    if (total > maxBytes) tooLarge(what, maxBytes);
  }
  if (total == 0) return std::make_shared<OwnedBuffer>(std::string());
  void* base = mmap(nullptr, total, PROT_READ, MAP_PRIVATE, tmp.fd, 0);
  if (base == MAP_FAILED) badInput(what + ": cannot map the spooled input: " + std::strerror(errno));
  return std::make_shared<MappedBuffer>(base, total, share(tmp));
}

namespace {

// The process's spill file: an unlinked temporary file that only grows;
// each spilled payload starts on a page and is mapped on its own.
struct Spill {
  std::mutex mutex;
  SharedFd fd;
  uint64_t end = 0;
  bool failed = false;
  bool warned = false;
};

Spill& spillFile() {
  static Spill s;
  return s;
}

bool writeAllAt(int fd, const char* p, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

Bytes Buffer::spill(std::string_view bytes, const char* what) {
  Spill& s = spillFile();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bytes.empty() || s.failed) return Bytes::copyOf(bytes);
  // Without a usable spill file the bytes stay in memory: the run still
  // succeeds, but a user limiting memory is told once why it grows.
  auto inMemory = [&](const std::string& why) {
    if (!std::exchange(s.warned, true))
      spdlog::warn("{} are kept in memory: {} (set TMPDIR to a writable folder with space)", what, why);
    return Bytes::copyOf(bytes);
  };
  try {
    if (!s.fd) s.fd = std::make_shared<Fd>(unlinkedTempFile("spill"));
  } catch (const std::exception& e) {
    s.failed = true;
    return inMemory(e.what());
  }
  auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t at = (s.end + page - 1) / page * page;
  if (!writeAllAt(s.fd->fd, bytes.data(), bytes.size(), at))
    return inMemory(std::string("cannot write the spill file: ") + std::strerror(errno));  // a full disk
  void* base = mmap(nullptr, bytes.size(), PROT_READ, MAP_SHARED, s.fd->fd, static_cast<off_t>(at));
  if (base == MAP_FAILED) return inMemory(std::string("cannot map the spill file: ") + std::strerror(errno));
  s.end = at + bytes.size();
  return Bytes::of(std::make_shared<MappedBuffer>(base, bytes.size(), s.fd, at, /*spilled=*/true));
}

std::shared_ptr<const Buffer> Buffer::fromString(std::string bytes) {
  return std::make_shared<OwnedBuffer>(std::move(bytes));
}

bool readAllAt(int fd, char* out, size_t size, uint64_t offset) {
  while (size > 0) {
    ssize_t n = pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = 0;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace graphrw
