// Writes a file through a temporary file beside it and a rename, so a failure
// never leaves a partial file and never touches an existing one.
#pragma once

#include <filesystem>
#include <string>

namespace graphrw {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target);  // throws Error(OutputFailed)
  ~AtomicFile();                                       // removes the temporary unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& target() const { return target_; }
  void commit();  // renames over the target

 private:
  std::filesystem::path target_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
};

struct Piece;
// Writes all bytes to fd (retrying short writes). Throws Error(OutputFailed) naming `what`.
void writeAll(int fd, const char* data, size_t size, const std::string& what);

}  // namespace graphrw
