#include "support.h"

#include <google/protobuf/util/message_differencer.h>
#include <onnx/defs/parser.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

namespace fs = std::filesystem;

namespace graphrw::test {

onnx::ModelProto parseModel(const std::string& text) {
  onnx::ModelProto model;
  auto status = onnx::OnnxParser::Parse(model, text.c_str());
  INFO(status.ErrorMessage());
  REQUIRE(status.IsOK());
  return model;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  REQUIRE(out.good());
}

onnx::ModelProto readProto(const fs::path& path) {
  onnx::ModelProto proto;
  std::string bytes = readFile(path);
  REQUIRE(proto.ParseFromString(bytes));
  return proto;
}

void writeProto(const onnx::ModelProto& proto, const fs::path& path) { writeFile(path, proto.SerializeAsString()); }

bool sameMessage(const google::protobuf::Message& a, const google::protobuf::Message& b, std::string* diff) {
  google::protobuf::util::MessageDifferencer d;
  std::string report;
  d.ReportDifferencesToString(&report);
  bool same = d.Compare(a, b);
  if (diff) *diff = report.substr(0, 2000);
  return same;
}

TempDir::TempDir() {
  static std::mt19937_64 rng{std::random_device{}()};
  path_ = fs::temp_directory_path() / ("graphrw-test-" + std::to_string(rng()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

RunResult run(const std::string& command, const std::string& stdinFile) {
  TempDir dir;
  std::string full = "(" + command + ") >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  if (!stdinFile.empty()) full += " <" + stdinFile;
  else full += " </dev/null";
  int raw = std::system(full.c_str());
  RunResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = readFile(dir / "out");
  r.err = readFile(dir / "err");
  return r;
}

std::string graphrwBin() { return GRAPHRW_BIN; }

}  // namespace graphrw::test
