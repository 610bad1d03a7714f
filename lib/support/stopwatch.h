// Phase times at debug level (-v), for profiling passes on large models.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>

namespace graphrw {

class Stopwatch {
 public:
  explicit Stopwatch(const char* owner) : owner_(owner) {}
  // Logs the time since the last lap (or construction) under `what`.
  void lap(const char* what) {
    auto now = std::chrono::steady_clock::now();
    spdlog::debug("{}: {} {:.3f}s", owner_, what, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  const char* owner_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace graphrw
