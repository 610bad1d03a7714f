#include "atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.h"

namespace fs = std::filesystem;

namespace graphrw {

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)) {
  fs::path dir = target_.parent_path();
  if (dir.empty()) dir = ".";
  temp_ = (dir / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
  fd_ = mkstemp(temp_.data());
  if (fd_ < 0) fail(ExitCode::OutputFailed, target_.string() + ": cannot create a temporary file: " + std::strerror(errno));
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!committed_) unlink(temp_.c_str());
}

void AtomicFile::commit() {
  if (close(fd_) != 0) {
    fd_ = -1;
    fail(ExitCode::OutputFailed, target_.string() + ": write failed: " + std::strerror(errno));
  }
  fd_ = -1;
  if (rename(temp_.c_str(), target_.c_str()) != 0)
    fail(ExitCode::OutputFailed, target_.string() + ": cannot rename the temporary file into place: " + std::strerror(errno));
  committed_ = true;
}

void writeAll(int fd, const char* data, size_t size, const std::string& what) {
  while (size > 0) {
    ssize_t n = write(fd, data, std::min<size_t>(size, 1u << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(ExitCode::OutputFailed, what + ": write failed: " + std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace graphrw
