// Helpers shared by graphrw's tests.
#pragma once

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace graphrw::test {

// Parses ONNX's textual syntax (onnx/defs/parser.h); fails the test on a parse error.
onnx::ModelProto parseModel(const std::string& text);
// Parses a whole file's bytes as a ModelProto with protobuf; fails the test if it cannot.
onnx::ModelProto readProto(const std::filesystem::path& path);
// A serialized TensorProto (the backend corpus's input_N.pb / output_N.pb).
onnx::TensorProto readTensorFile(const std::filesystem::path& path);
void writeProto(const onnx::ModelProto& proto, const std::filesystem::path& path);
// Main-graph float initializer `name` becomes a sparse initializer holding its
// nonzero elements, with linear indices [NNZ] or coordinates [NNZ, rank].
void sparsify(onnx::ModelProto& model, const std::string& name, bool coordinates);
// Adds a main-graph float initializer [count] holding i * step; returns its raw bytes.
std::string addFloatRamp(onnx::ModelProto& model, const std::string& name, size_t count, float step);
std::string readFile(const std::filesystem::path& path);
void writeFile(const std::filesystem::path& path, const std::string& bytes);
// Field-by-field equality (google::protobuf::util::MessageDifferencer); fills `diff`.
bool sameMessage(const google::protobuf::Message& a, const google::protobuf::Message& b, std::string* diff = nullptr);

// A fresh empty folder under the system temp folder, removed at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Runs a shell command; returns its exit status and captures stdout/stderr.
struct RunResult {
  int status;
  std::string out;
  std::string err;
};
RunResult run(const std::string& command, const std::string& stdinFile = "");
std::string graphrwBin();

// Compares what a corpus test found with its expected record,
// tests/expected/NAME.json (an object whose members are lists of names, or
// objects of name -> text), entry by entry: an entry gained or lost fails
// the test, naming it. With GRAPHRW_UPDATE_EXPECTED=1 the record is written
// instead (review the diff before committing it).
void checkExpected(const std::string& name, const nlohmann::json& actual);

// Sets (value) or unsets (nullptr) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace graphrw::test
