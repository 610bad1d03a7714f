#include "support.h"

#include <cstdlib>
#include <cstring>
#include <set>

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

std::string addFloatRamp(onnx::ModelProto& model, const std::string& name, size_t count, float step) {
  auto* t = model.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<int64_t>(count));
  std::string raw(count * sizeof(float), '\0');
  for (size_t i = 0; i < count; ++i) {
    float v = static_cast<float>(i) * step;
    std::memcpy(raw.data() + i * sizeof(float), &v, sizeof(float));
  }
  t->set_raw_data(raw);
  return raw;
}

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

onnx::TensorProto readTensorFile(const fs::path& path) {
  onnx::TensorProto t;
  REQUIRE(t.ParseFromString(readFile(path)));
  return t;
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
  if (!stdinFile.empty())
    full += " <" + stdinFile;
  else
    full += " </dev/null";
  int raw = std::system(full.c_str());
  RunResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = readFile(dir / "out");
  r.err = readFile(dir / "err");
  return r;
}

std::string graphrwBin() { return GRAPHRW_BIN; }

void checkExpected(const std::string& name, const nlohmann::json& actual) {
  const fs::path file = fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "expected" / (name + ".json");
  if (const char* update = std::getenv("GRAPHRW_UPDATE_EXPECTED"); update && std::string(update) == "1") {
    fs::create_directories(file.parent_path());
    writeFile(file, actual.dump(1) + "\n");
    WARN("wrote " << file.string());
    return;
  }
  INFO("no record " << file.string() << ": GRAPHRW_UPDATE_EXPECTED=1 writes what was found (review it)");
  REQUIRE(fs::exists(file));
  const auto expected = nlohmann::json::parse(readFile(file));
  std::vector<std::string> differences;
  for (const auto& [section, want] : expected.items()) {
    const nlohmann::json got = actual.contains(section) ? actual[section] : nlohmann::json();
    if (want.is_array()) {
      std::set<std::string> a, b;
      for (const auto& v : want) a.insert(v.get<std::string>());
      if (got.is_array())
        for (const auto& v : got) b.insert(v.get<std::string>());
      for (const auto& v : a)
        if (!b.count(v)) differences.push_back(section + ": lost " + v);
      for (const auto& v : b)
        if (!a.count(v)) differences.push_back(section + ": new " + v);
    } else {
      for (const auto& [k, v] : want.items())
        if (!got.is_object() || !got.contains(k))
          differences.push_back(section + ": lost " + k + " (" + v.dump() + ")");
        else if (got[k] != v)
          differences.push_back(section + ": " + k + " was " + v.dump() + ", now " + got[k].dump());
      if (got.is_object())
        for (const auto& [k, v] : got.items())
          if (!want.contains(k)) differences.push_back(section + ": new " + k + " (" + v.dump() + ")");
    }
  }
  for (const auto& [section, _] : actual.items())
    if (!expected.contains(section)) differences.push_back("a section the record lacks: " + section);
  for (const auto& d : differences) UNSCOPED_INFO(d);
  INFO("expected in " << file.string() << "; GRAPHRW_UPDATE_EXPECTED=1 writes what was found");
  CHECK(differences.empty());
}

void sparsify(onnx::ModelProto& model, const std::string& name, bool coordinates) {
  auto* inits = model.mutable_graph()->mutable_initializer();
  for (int i = 0; i < inits->size(); ++i) {
    const onnx::TensorProto& t = inits->Get(i);
    if (t.name() != name) continue;
    if (t.data_type() != onnx::TensorProto::FLOAT || t.has_raw_data())
      throw std::runtime_error("sparsify: '" + name + "' is not a float_data tensor");
    onnx::SparseTensorProto sp;
    *sp.mutable_dims() = t.dims();
    auto* values = sp.mutable_values();
    values->set_name(name);
    values->set_data_type(onnx::TensorProto::FLOAT);
    auto* indices = sp.mutable_indices();
    indices->set_data_type(onnx::TensorProto::INT64);
    int64_t nnz = 0;
    for (int e = 0; e < t.float_data_size(); ++e) {
      if (t.float_data(e) == 0.0f) continue;
      values->add_float_data(t.float_data(e));
      ++nnz;
      if (!coordinates) {
        indices->add_int64_data(e);
        continue;
      }
      std::vector<int64_t> at(static_cast<size_t>(t.dims_size()));
      int64_t rest = e;
      for (int d = t.dims_size() - 1; d >= 0; --d) {
        at[static_cast<size_t>(d)] = rest % t.dims(d);
        rest /= t.dims(d);
      }
      for (int64_t c : at) indices->add_int64_data(c);
    }
    values->add_dims(nnz);
    indices->add_dims(nnz);
    if (coordinates) indices->add_dims(t.dims_size());
    *model.mutable_graph()->add_sparse_initializer() = std::move(sp);
    inits->DeleteSubrange(i, 1);
    return;
  }
  throw std::runtime_error("sparsify: no initializer '" + name + "'");
}

}  // namespace graphrw::test
