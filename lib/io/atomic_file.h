// Writes an output so that a failure never leaves a partial file and never
// harms an existing one: a regular file (or what a symlink points to) is
// written to a temporary file beside it and renamed over it, keeping the old
// file's mode; a character device, FIFO or socket (/dev/null, a pipe) is
// written directly; a folder is refused. Temporary files are named
// `.NAME.graphrw-tmp-PID-XXXXXX`; creating one removes those that processes
// no longer running left in the same folder (a kill -9).
#pragma once

#include <filesystem>
#include <string>

namespace graphrw {

class AtomicFile {
 public:
  // Throws Error(OutputFailed) naming the path, or the folder that is missing or read-only.
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();  // removes the temporary unless committed; restores a kept backup
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& target() const { return target_; }
  // Renames the temporary over the target. With `keepBackup`, the file it
  // replaces is kept (hard-linked) until release(); destroying this object
  // before release() puts it back: for outputs that must change together.
  void commit(bool keepBackup = false);
  void release();

 private:
  std::filesystem::path target_;  // as given
  std::filesystem::path real_;  // what is replaced: the target, or what its symlink points to
  std::string temp_;
  std::string backup_;
  int fd_ = -1;
  bool direct_ = false;  // a device, FIFO or socket: written in place
  bool committed_ = false;
  bool hasMode_ = false;
  unsigned mode_ = 0;
};

// Checks, before anything is read or written, that `target` can be an output:
// not a folder, and in a folder that exists. Throws Error(OutputFailed).
void checkOutputPath(const std::filesystem::path& target);

// Writes all bytes to fd (retrying short writes). Throws Error(OutputFailed) naming `what`.
void writeAll(int fd, const char* data, size_t size, const std::string& what);

}  // namespace graphrw
