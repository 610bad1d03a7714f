// graphrw's error type and the exit codes it maps to (docs/cli.md).
#pragma once

#include <stdexcept>
#include <string>

namespace graphrw {

// Documented process exit codes. Keep docs/cli.md in step.
enum class ExitCode : int {
  Ok = 0,
  Findings = 1,  // validate found problems; a verifier failure
  Usage = 2,  // bad command line or rule file
  BadInput = 3,  // the model (or its external data) cannot be read or is not valid
  OutputFailed = 4,  // the output could not be written
  Unsupported = 5,  // the model is valid but cannot be rewritten as asked (an op with no form at the target opset)
  Internal = 70,  // a bug in graphrw
};

// The one exception type that crosses module boundaries. Third-party exceptions
// (protobuf, ONNX, nlohmann_json, CLI11) are caught at the loader, rule-parser
// and CLI boundaries and turned into this.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

[[noreturn]] inline void fail(ExitCode code, const std::string& message) { throw Error(code, message); }
[[noreturn]] inline void badInput(const std::string& message) { throw Error(ExitCode::BadInput, message); }
[[noreturn]] inline void usageError(const std::string& message) { throw Error(ExitCode::Usage, message); }

}  // namespace graphrw
