// fold against ONNX's backend test corpus: every node model whose ops are
// all foldable, with its test inputs made initializers, must fold to
// initializers equal to the expected outputs (the values ONNX Runtime is
// tested against). tests/expected/fold-corpus.json records which cases fold
// and which are left alone (and why), so a case lost or gained fails.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "driver/pass_manager.h"
#include "fold/fold.h"
#include "helpers.h"
#include "io/loader.h"
#include "passes/fold/fold.h"
#include "support.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace graphrw;

namespace {

// Equal within the corpus's own tolerance for floats (rtol 1e-3, atol 1e-7, as
// ONNX's backend runner), exactly for every other type.
std::string difference(const HostTensor& got, const HostTensor& want) {
  if (got.type != want.type) return "type " + std::to_string(got.type) + " for " + std::to_string(want.type);
  if (got.dims != want.dims) return "shape differs";
  if (got.type != onnx::TensorProto::FLOAT && got.type != onnx::TensorProto::DOUBLE)
    return got.data == want.data ? "" : "values differ";
  for (int64_t i = 0; i < got.count(); ++i) {
    double a, b;
    if (got.type == onnx::TensorProto::FLOAT) {
      float x, y;
      std::memcpy(&x, got.data.data() + i * 4, 4);
      std::memcpy(&y, want.data.data() + i * 4, 4);
      a = x, b = y;
    } else {
      std::memcpy(&a, got.data.data() + i * 8, 8);
      std::memcpy(&b, want.data.data() + i * 8, 8);
    }
    if (std::isnan(a) && std::isnan(b)) continue;
    if (!(std::fabs(a - b) <= 1e-7 + 1e-3 * std::fabs(b)))
      return "element " + std::to_string(i) + ": " + std::to_string(a) + " for " + std::to_string(b);
  }
  return "";
}

}  // namespace

TEST_CASE("fold on the backend corpus: what folds equals the expected outputs", "[fold][corpus]") {
  fs::path node = fs::path(ONNX_TESTDATA_DIR) / "node";
  REQUIRE(fs::is_directory(node));
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(node)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  std::set<std::string> folded;
  std::map<std::string, std::string> left;
  std::vector<std::string> failures;
  for (const auto& dir : entries) {
    std::string name = dir.filename().string();
    fs::path set = dir / "test_data_set_0";
    if (!fs::exists(dir / "model.onnx") || !fs::exists(set)) continue;
    onnx::ModelProto proto = test::readProto(dir / "model.onnx");
    bool tensors = true;  // optional and sequence inputs cannot be initializers
    for (const auto& in : proto.graph().input()) tensors &= in.type().has_tensor_type();
    if (!tensors) continue;
    {
      auto probe = loadModel((dir / "model.onnx").string());
      bool all = !probe->graph().nodes().empty();
      for (const auto& n : probe->graph().nodes()) all &= isFoldable(*n) && n->subgraphs().empty();
      if (!all) continue;
    }
    // The test inputs become initializers: the graph computes only from constants.
    auto& g = *proto.mutable_graph();
    for (int i = 0; i < g.input_size(); ++i) {
      fs::path in = set / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(in)) break;
      onnx::TensorProto t = test::readTensorFile(in);
      t.set_name(g.input(i).name());
      *g.add_initializer() = t;
    }
    g.clear_input();
    nlohmann::json report;
    std::unique_ptr<ir::Model> model;
    try {
      model = test::runPass(proto, passes::createFoldPass({}), &report);
    } catch (const Error& e) {
      left[name] = std::string("refused: ") + e.what();
      continue;
    }
    if (!model->graph().nodes().empty()) {
      left[name] = "left: " + model->graph().nodes().front()->opType();
      continue;
    }
    for (int i = 0; i < g.output_size(); ++i) {
      const ir::Value* out = model->graph().outputs()[static_cast<size_t>(i)].value;
      onnx::TensorProto expected = test::readTensorFile(set / ("output_" + std::to_string(i) + ".pb"));
      if (!out->isInitializer()) {
        failures.push_back(name + ": output " + std::to_string(i) + " is not a constant");
        continue;
      }
      std::string d = difference(readTensor(*out->initializer()), readTensor(ir::Tensor(expected)));
      if (!d.empty()) failures.push_back(name + ": output " + std::to_string(i) + ": " + d);
    }
    folded.insert(name);
  }
  INFO(failures.size() << " wrong of " << folded.size() << " folded");
  for (const auto& f : failures) INFO(f);
  CHECK(failures.empty());
  CHECK(folded.size() > 250);
  test::checkExpected("fold-corpus", {{"folded", folded}, {"left", left}});
}
