#include "helpers.h"

#include <catch2/catch.hpp>

#include "driver/compare.h"
#include "driver/pass_manager.h"
#include "driver/validate.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ort.h"
#include "passes/expand/expand.h"
#include "passes/set_shapes/set_shapes.h"
#include "support.h"

namespace graphrw::test {

using namespace ir;

std::unique_ptr<Model> runPass(const onnx::ModelProto& proto, std::unique_ptr<Pass> pass, nlohmann::json* report) {
  auto model = loadModel(proto);
  PassManager pm({/*verifyEach=*/true, std::nullopt, ""});
  pm.add(std::move(pass));
  auto r = pm.run(*model);
  if (report) *report = r[0];
  return model;
}

SelectorSet sel(const std::string& text) { return SelectorSet{{Selector::parse(text)}}; }

std::vector<std::string> nodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const auto& n : g.nodes()) names.push_back(n->name().str());
  return names;
}

Node* byName(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n->name() == name) return n.get();
  return nullptr;
}

size_t countOp(const onnx::ModelProto& m, const std::string& op) {
  size_t n = 0;
  for (const auto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

namespace {
void countNodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, std::map<std::string, size_t>& out) {
  for (const auto& n : nodes) {
    out[(n.domain().empty() ? "ai.onnx" : n.domain()) + "::" + n.op_type()]++;
    for (const auto& a : n.attribute()) {
      if (a.has_g()) countNodes(a.g().node(), out);
      for (const auto& g : a.graphs()) countNodes(g.node(), out);
    }
  }
}
}  // namespace

std::map<std::string, size_t> opCounts(const onnx::ModelProto& m) {
  std::map<std::string, size_t> out;
  countNodes(m.graph().node(), out);
  for (const auto& f : m.functions()) countNodes(f.node(), out);
  return out;
}

void checkSameMaths(const onnx::ModelProto& before, const onnx::ModelProto& after, double tol, int intMax) {
  TempDir dir;
  writeProto(before, dir / "before.onnx");
  writeProto(after, dir / "after.onnx");
  auto report = ortCompare(dir / "before.onnx", dir / "after.onnx", tol, intMax);
  INFO(report.dump());
  CHECK(report["ok"] == true);
}

void checkSameMaths(const onnx::ModelProto& before, Model& after, double tol, int intMax) {
  TempDir dir;
  writeProto(before, dir / "before.onnx");
  writeModel(after, (dir / "after.onnx").string());
  auto report = ortCompare(dir / "before.onnx", dir / "after.onnx", tol, intMax);
  INFO(report.dump());
  CHECK(report["ok"] == true);
}

void checkValid(Model& m) {
  // graphrw's own validate: ONNX's checker, strict shape inference, the IR verifier, PopART attribute types.
  for (const auto& f : validateModel(m)) FAIL_CHECK(f.check << ": " << f.where << ": " << f.message);
}

// Standard ONNX for ONNX Runtime: graphrw compare's mapping (Calls inlined,
// ai.graphcore ops by their definitions).
onnx::ModelProto mapBack(Model& original) { return standardOnnx(original); }

std::unique_ptr<Pass> exportShapes(const ir::Model& m) {
  const std::map<std::string, int64_t> wanted = {{"batch", 1}, {"sequence", 8}};
  passes::SetShapesOptions o;
  for (const auto& in : m.graph().inputs())
    if (const onnx::TypeProto* t = in.value->type(); t && t->has_tensor_type())
      for (const auto& d : t->tensor_type().shape().dim())
        if (auto it = wanted.find(d.dim_param()); d.has_dim_param() && it != wanted.end())
          o.dims[it->first] = it->second;
  return o.dims.empty() ? nullptr : passes::createSetShapesPass(o);
}

}  // namespace graphrw::test
