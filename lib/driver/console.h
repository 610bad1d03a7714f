// What graphrw writes on stderr: log lines ("graphrw: warning: ..."), named
// after the model a batch worker is converting, and on a terminal one status
// line (a batch's progress) that log lines never break: it is cleared before
// a log line and drawn again after it.
#pragma once

#include <cstddef>
#include <string>

namespace graphrw::cli {

// Sets up the default spdlog logger on stderr at the level -v/-q ask for.
void setupLogging(int verbosity, bool quiet);

// While alive, log lines from this thread start with "MODEL: " and its
// warnings and errors are counted.
class ModelLogScope {
 public:
  explicit ModelLogScope(const std::string& model);
  ~ModelLogScope();
  ModelLogScope(const ModelLogScope&) = delete;
  ModelLogScope& operator=(const ModelLogScope&) = delete;
  size_t warnings() const;  // warning (and error) lines logged in this scope so far
};

// The status line (a terminal only; "" removes it). Thread-safe.
void setStatusLine(const std::string& text);
// A line on stderr that does not break the status line.
void printLine(const std::string& text);

}  // namespace graphrw::cli
