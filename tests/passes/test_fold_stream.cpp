// Concat of large weights folded as views (qkv-fusion's weights
// folded by streaming, never materialised whole).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "driver/pass_manager.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/fingerprint.h"
#include "passes/fold/fold.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;
namespace fs = std::filesystem;

namespace {

// A [rows, cols] float initializer named `name` (a ramp starting at `start`); returns its bytes.
std::string addMatrix(onnx::ModelProto& m, const std::string& name, int64_t rows, int64_t cols, float start) {
  std::string raw = addFloatRamp(m, name, static_cast<size_t>(rows * cols), 0.001f);
  auto* t = m.mutable_graph()->mutable_initializer(m.graph().initializer_size() - 1);
  for (size_t i = 0; i < raw.size(); i += 4) {
    float v;
    std::memcpy(&v, raw.data() + i, 4);
    v += start;
    std::memcpy(raw.data() + i, &v, 4);
  }
  t->set_raw_data(raw);
  t->clear_dims();
  t->add_dims(rows);
  t->add_dims(cols);
  return raw;
}

// Rows of `a` and `b` side by side (Concat on axis 1 of row-major matrices).
std::string besideEachOther(const std::string& a, size_t rowA, const std::string& b, size_t rowB) {
  std::string out;
  for (size_t r = 0; r * rowA < a.size(); ++r) {
    out.append(a, r * rowA, rowA);
    out.append(b, r * rowB, rowB);
  }
  return out;
}

// Writes `m`, loads it from the file (payloads are views of the mapped file) and folds it.
std::unique_ptr<Model> foldFromFile(const onnx::ModelProto& m, const fs::path& path, nlohmann::json& report) {
  writeProto(m, path);
  auto model = loadModel(path.string());
  PassManager pm({/*verifyEach=*/true, std::nullopt, ""});  // the fingerprint sees the pieces
  pm.add(passes::createFoldPass({}));
  report = pm.run(*model)[0];
  return model;
}

const Tensor* initializerNamed(const Model& model, const std::string& name) {
  for (const auto& i : model.graph().initializers())
    if (i.value->name() == name) return i.tensor.get();
  return nullptr;
}

}  // namespace

TEST_CASE("fold: a Concat of large weights becomes views of their rows, never read, written interleaved", "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 200] x) => (float[1, 384] y) {
  w = Concat <axis = 1> (a, b)
  y = MatMul (x, w)
}
)");
  std::string a = addMatrix(m, "a", 200, 256, 0.0f);
  std::string b = addMatrix(m, "b", 200, 128, 100.0f);
  const std::string expected = besideEachOther(a, 256 * 4, b, 128 * 4);
  TempDir dir;
  nlohmann::json report;
  auto model = foldFromFile(m, dir / "in.onnx", report);
  CHECK(report["folded"]["Concat"] == 1);
  const Tensor* w = initializerNamed(*model, "w");
  REQUIRE(w);
  CHECK_FALSE(w->rawView());
  CHECK(w->dims() == std::vector<int64_t>{200, 384});
  REQUIRE(w->rawPieces().size() == 400);  // a row of each input per row: none adjacent in the file
  for (const Bytes& p : w->rawPieces()) {
    REQUIRE(p.owner);
    CHECK(p.owner->fd() >= 0);
    CHECK(p.owner->size() == fs::file_size(dir / "in.onnx"));  // the input model's mapping, not the spill file
  }
  CHECK(w->rawPieces()[0].size == 256 * 4);
  CHECK(w->rawPieces()[1].size == 128 * 4);
  CHECK(w->storedBytes() == expected.size());
  CHECK(w->rawCopy() == expected);
  CHECK(!initializerNamed(*model, "a"));  // pruned: the views keep the file's mapping, not the tensor

  // Embedded: one raw_data, the rows interleaved.
  writeModel(*model, (dir / "out.onnx").string());
  auto written = readProto(dir / "out.onnx");
  REQUIRE(written.graph().initializer_size() == 1);
  CHECK(written.graph().initializer(0).raw_data() == expected);
  checkSameMaths(m, written);
  // The same bytes as a view or as pieces: the same fingerprint.
  CHECK(fingerprint(*model) == fingerprint(*loadModel((dir / "out.onnx").string())));

  // Moved to an external data file: the pieces back to back at one offset.
  WriteOptions options;
  options.external = ExternalMode::Move;
  options.externalFile = "out.bin";
  writeModel(*model, (dir / "moved.onnx").string(), options);
  auto moved = readProto(dir / "moved.onnx");
  REQUIRE(moved.graph().initializer_size() == 1);
  uint64_t offset = 0, length = 0;
  for (const auto& e : moved.graph().initializer(0).external_data()) {
    if (e.key() == "offset") offset = std::stoull(e.value());
    if (e.key() == "length") length = std::stoull(e.value());
  }
  CHECK(length == expected.size());
  CHECK(readFile(dir / "out.bin").substr(offset, length) == expected);
}

TEST_CASE("fold: a Concat of a folded Concat takes views of its pieces, narrow rows are computed", "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1, 400] x, float[1, 20000] z) => (float[1, 384] y, float[1, 2] n) {
  w = Concat <axis = 1> (a, b)
  v = Concat <axis = 0> (w, w)
  y = MatMul (x, v)
  c = Concat <axis = 1> (p, q)
  n = MatMul (z, c)
}
)");
  std::string a = addMatrix(m, "a", 200, 256, 0.0f);
  std::string b = addMatrix(m, "b", 200, 128, 100.0f);
  std::string p = addMatrix(m, "p", 20000, 1, 0.0f);  // 4-byte rows: 40,000 views would cost more than a copy
  std::string q = addMatrix(m, "q", 20000, 1, -50.0f);
  const std::string w = besideEachOther(a, 256 * 4, b, 128 * 4);
  TempDir dir;
  nlohmann::json report;
  auto model = foldFromFile(m, dir / "in.onnx", report);
  CHECK(report["folded"]["Concat"] == 3);
  const Tensor* v = initializerNamed(*model, "v");
  REQUIRE(v);
  CHECK(v->rawPieces().size() == 800);  // w's 400 views, twice
  CHECK(v->rawCopy() == w + w);
  const Tensor* c = initializerNamed(*model, "c");
  REQUIRE(c);
  CHECK(c->rawPieces().empty());
  REQUIRE(c->rawView());  // computed, then spilled
  CHECK(c->rawView()->copy() == besideEachOther(p, 4, q, 4));
  writeModel(*model, (dir / "out.onnx").string());
  auto written = readProto(dir / "out.onnx");
  checkSameMaths(m, written);
}

TEST_CASE("a file's own fields with the placeholders' numbers give no tensor another's bytes", "[loader][wire]") {
  onnx::ModelProto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[20000] x) => (float[20000] y) {
  s = Add (x, a)
  y = Add (s, b)
}
)");
  std::string a = addFloatRamp(m, "a", 20000, 1.0f);
  std::string b = addFloatRamp(m, "b", 20000, -1.0f);
  // b claims placeholder 0 (a's bytes) and a count of 2, as fields of its own.
  auto* unknown = m.mutable_graph()->mutable_initializer(1)->GetReflection()->MutableUnknownFields(
      m.mutable_graph()->mutable_initializer(1));
  unknown->AddVarint(536870000, 0);
  unknown->AddVarint(536870001, 2);
  TempDir dir;
  writeProto(m, dir / "in.onnx");
  auto model = loadModel((dir / "in.onnx").string());
  CHECK(initializerNamed(*model, "b")->rawCopy() == b);
  writeModel(*model, (dir / "out.onnx").string());
  auto written = readProto(dir / "out.onnx");
  REQUIRE(written.graph().initializer_size() == 2);
  CHECK(written.graph().initializer(0).raw_data() == a);
  CHECK(written.graph().initializer(1).raw_data() == b);
  CHECK(written.graph().initializer(1).unknown_fields().empty());
}
