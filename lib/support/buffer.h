// Immutable byte buffers: a memory-mapped file or bytes read from a stream.
// Tensor payloads are views into these; the shared_ptr keeps the mapping alive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace graphrw {

struct Bytes;

class Buffer {
 public:
  virtual ~Buffer() = default;
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }
  // The open file behind a mapped buffer (-1 otherwise): lets the writer copy
  // payloads file to file in the kernel without touching the mapping.
  virtual int fd() const { return -1; }
  // Where data() starts in fd()'s file.
  virtual uint64_t fileOffset() const { return 0; }
  // The bytes before `p` are not needed in memory for now (a forward scan
  // has passed them): a mapped buffer lets the kernel drop its pages, which
  // are read back from the file when touched again. Views stay valid.
  virtual void releaseBefore(const char* p) const { (void)p; }
  // Whether the `size` bytes at `offset` equal `bytes` (false past the end).
  // A mapped buffer reads them through its descriptor: touching the mapping
  // would map a whole page-cache folio (2 MiB on recent kernels) per call.
  virtual bool equalAt(uint64_t offset, const char* bytes, size_t size) const;
  // Copies the `size` bytes at `p` (inside this buffer) to `out`; a mapped
  // buffer reads them through its descriptor, for the reason above.
  virtual void copyOut(const char* p, size_t size, char* out) const;

  // Maps a whole file read-only; a file that is not regular (a device, a
  // FIFO) is spooled as spoolFd does. More than `maxBytes` is an error.
  // Throws Error(BadInput) naming the file.
  static std::shared_ptr<const Buffer> mapFile(const std::filesystem::path& path, size_t maxBytes = SIZE_MAX);
  // Reads a file descriptor (stdin, a pipe) to its end into owned memory.
  static std::shared_ptr<const Buffer> readFd(int fd, const std::string& what);
  // A file descriptor's bytes (stdin) as a mapped buffer: a regular file is
  // mapped as it is; a pipe is copied to an unlinked temporary file (in
  // $TMPDIR, else /tmp) that is then mapped, so a model read from a pipe costs
  // page cache, not its size in memory. Throws Error(BadInput) naming `what`.
  // More than `maxBytes` is an error, found after reading one byte more
  // (so /dev/zero ends).
  static std::shared_ptr<const Buffer> spoolFd(int fd, const std::string& what, size_t maxBytes = SIZE_MAX);
  // Bytes written to the process's spill file (an unlinked temporary file in
  // $TMPDIR, else /tmp) and mapped from there: a computed payload (a folded
  // weight) then costs page cache, not memory, and the writer copies it file
  // to file. Without a usable temporary file the bytes are kept in memory.
  // `what` names the bytes in the one warning given when they stay in memory.
  static Bytes spill(std::string_view bytes, const char* what = "folded weights");
  // Takes ownership of a string's bytes.
  static std::shared_ptr<const Buffer> fromString(std::string bytes);

 protected:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// A view of bytes that keeps its owner alive. Copying a Bytes never copies the bytes.
struct Bytes {
  std::shared_ptr<const Buffer> owner;
  const char* data = nullptr;
  size_t size = 0;

  std::string_view view() const { return {data, size}; }
  bool empty() const { return size == 0; }
  static Bytes of(std::shared_ptr<const Buffer> buffer) {
    Bytes b;
    b.data = buffer->data();
    b.size = buffer->size();
    b.owner = std::move(buffer);
    return b;
  }
  static Bytes copyOf(std::string_view s) { return of(Buffer::fromString(std::string(s))); }
  // The bytes as a string, read without touching a mapping (Buffer::copyOut).
  std::string copy() const {
    std::string s(size, '\0');
    if (size == 0) return s;
    if (owner) {
      owner->copyOut(data, size, s.data());
    } else {
      s.assign(data, size);
    }
    return s;
  }
};

// Reads exactly `size` bytes at `offset` of `fd` (pread, EINTR retried). False
// when the file ends first (errno is then 0) or a read fails (errno says why).
bool readAllAt(int fd, char* out, size_t size, uint64_t offset);

}  // namespace graphrw
