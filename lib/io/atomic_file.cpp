#include "io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

#include "io/fault.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace graphrw {
namespace {

constexpr const char* kTempTag = ".graphrw-tmp-";

[[noreturn]] void outputFailed(const std::string& message) { fail(ExitCode::OutputFailed, message); }

std::string why(int err) {
  if (err == ENOSPC) return "no space left on the device (disk full)";
  if (err == EROFS) return "the file system is read-only";
  return std::strerror(err);
}

fs::path folderOf(const fs::path& p) {
  fs::path dir = p.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// What a symlink (chain) finally names, even when that does not exist yet.
fs::path followLinks(fs::path p) {
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    fs::path next = fs::read_symlink(p, ec);
    if (ec) return p;
    p = next.is_absolute() ? next : folderOf(p) / next;
  }
  outputFailed(p.string() + ": too many levels of symbolic links");
}

// Removes temporaries of processes that are gone, once per folder per process.
void cleanStale(const fs::path& dir) {
  static std::mutex mutex;
  static std::set<std::string> cleaned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!cleaned.insert(fs::absolute(dir).lexically_normal().string()).second) return;
  }
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    auto at = name.find(kTempTag);
    if (name.empty() || name[0] != '.' || at == std::string::npos) continue;
    long pid = std::strtol(name.c_str() + at + std::strlen(kTempTag), nullptr, 10);
    if (pid <= 0 || pid == getpid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    unlinkat(dirfd(d), name.c_str(), 0);
  }
  closedir(d);
}

}  // namespace

void checkOutputPath(const fs::path& target) {
  fs::path real = followLinks(target);
  struct stat st;
  if (stat(real.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) outputFailed(target.string() + ": is a folder; name a file");
    return;
  }
  fs::path dir = folderOf(real);
  std::error_code ec;
  if (!fs::exists(dir, ec))
    outputFailed("cannot write " + target.string() + ": the folder " + dir.string() + " does not exist");
  if (!fs::is_directory(dir, ec))
    outputFailed("cannot write " + target.string() + ": " + dir.string() + " is not a folder");
}

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)) {
  checkOutputPath(target_);
  real_ = followLinks(target_);
  struct stat st;
  if (stat(real_.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
      direct_ = true;
      fd_ = open(real_.c_str(), O_WRONLY | O_CLOEXEC | (S_ISCHR(st.st_mode) ? O_TRUNC : 0));
      if (fd_ < 0) outputFailed(target_.string() + ": cannot open: " + why(errno));
      return;
    }
    hasMode_ = true;
    mode_ = st.st_mode & 07777;
  }
  fs::path dir = folderOf(real_);
  cleanStale(dir);
  temp_ = (dir / ("." + real_.filename().string() + kTempTag + std::to_string(getpid()) + "-XXXXXX")).string();
  fd_ = mkstemp(temp_.data());
  if (fd_ < 0) {
    int err = errno;
    if (err == EACCES || err == EPERM || err == EROFS)
      outputFailed("cannot write " + target_.string() + ": the folder " + dir.string() + " is not writable (" +
                   why(err) + ")");
    outputFailed("cannot write " + target_.string() + ": cannot create a temporary file in " + dir.string() + ": " +
                 why(err));
  }
  if (hasMode_) {
    fchmod(fd_, mode_);
    if (geteuid() == 0) (void)fchown(fd_, st.st_uid, st.st_gid);
  } else {
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd_, 0666 & ~mask);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!direct_ && !committed_) unlink(temp_.c_str());
  if (!backup_.empty()) rename(backup_.c_str(), real_.c_str());  // a later output failed: put the old file back
}

void AtomicFile::commit(bool keepBackup) {
  int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) outputFailed(target_.string() + ": write failed: " + why(errno));
  if (direct_) {
    committed_ = true;
    return;
  }
  if (keepBackup && hasMode_) {
    std::string backup = temp_ + ".old";
    if (link(real_.c_str(), backup.c_str()) == 0) backup_ = backup;
  }
  fault::at("rename");
  if (rename(temp_.c_str(), real_.c_str()) != 0) {
    int err = errno;
    if (!backup_.empty()) unlink(backup_.c_str());
    backup_.clear();
    outputFailed(target_.string() + ": cannot rename the temporary file into place: " + why(err));
  }
  committed_ = true;
  fault::at("renamed");
}

void AtomicFile::release() {
  if (!backup_.empty()) unlink(backup_.c_str());
  backup_.clear();
}

void writeAll(int fd, const char* data, size_t size, const std::string& what) {
  while (size > 0) {
    ssize_t n = write(fd, data, std::min<size_t>(size, 1u << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      outputFailed(what + ": write failed: " + why(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
    fault::wrote(static_cast<size_t>(n));
  }
}

}  // namespace graphrw
