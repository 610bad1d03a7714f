#include <catch2/catch.hpp>

#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/prune/prune.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;

namespace {

const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1, "ai.graphcore" : 1, "dead" : 1]>
main (float[2] X, bool c) => (float[2] Y) <float[2] W = {1, 2}, float[2] unused = {3, 4}, float[2] inner = {5, 6},
    float[2] ghost> {
  A = Mul(X, W)
  B = local.Outer(A)
  Y = If(c) <then_branch = g1 () => (float[2] t) { t = Add(B, inner) },
              else_branch = g2 () => (float[2] e) { e = Identity(B) }>
}
<domain: "local", opset_import: ["" : 17, "local" : 1, "spare" : 1]>
Outer (x) => (y) {
  y = local.Inner(x)
}
<domain: "local", opset_import: ["" : 17]>
Inner (x) => (y) {
  y = Relu(x)
}
<domain: "local", opset_import: ["" : 17, "local" : 1]>
Orphan (x) => (y) {
  y = local.OrphanHelper(x)
}
<domain: "local", opset_import: ["" : 17]>
OrphanHelper (x) => (y) {
  y = Neg(x)
}
)";

std::set<std::string> functionNames(const Model& m) {
  std::set<std::string> names;
  for (const auto& f : m.functions()) names.insert(f->key().name);
  return names;
}

// kModel with an unused initializer 'stray' in the If's else-branch (the
// text parser takes no initializers in graph attributes).
onnx::ModelProto modelWithStray() {
  auto proto = parseModel(kModel);
  auto* ifNode = proto.mutable_graph()->mutable_node(2);
  for (auto& a : *ifNode->mutable_attribute())
    if (a.name() == "else_branch") {
      auto* t = a.mutable_g()->add_initializer();
      t->set_name("stray");
      t->set_data_type(onnx::TensorProto::FLOAT);
      t->add_dims(2);
      t->add_float_data(7);
      t->add_float_data(8);
    }
  return proto;
}

}  // namespace

TEST_CASE("prune drops what nothing uses and keeps everything that is used", "[prune]") {
  auto proto = modelWithStray();
  nlohmann::json report;
  auto model = runPass(proto, passes::createPrunePass({}), &report);
  Graph& g = model->graph();

  // Initializers: 'unused' goes; W (read in the graph) and 'inner' (read only
  // from inside the If's then-branch) stay; 'stray' in the else-branch goes.
  CHECK(g.findLocal("unused") == nullptr);
  CHECK(g.findLocal("W") != nullptr);
  CHECK(g.findLocal("inner") != nullptr);
  Graph* elseBranch = g.nodes().back()->subgraphs()[1];
  CHECK(elseBranch->initializers().empty());
  CHECK(report["initializers_removed"] == 2);

  // Functions: Outer and Inner (reached through Outer) stay; Orphan and the
  // helper only Orphan calls go.
  CHECK(functionNames(*model) == std::set<std::string>{"Inner", "Outer"});
  CHECK(report["functions_removed"].size() == 2);

  // value_info of a value nothing defines.
  CHECK(g.findLocal("ghost") == nullptr);
  CHECK(report["value_info_removed"] == 1);

  // Imports: 'dead' and 'ai.graphcore' leave the model, 'spare' leaves Outer; ai.onnx and local stay.
  auto imports = model->opsetImports();
  CHECK(imports.count(""));
  CHECK(imports.count("local"));
  CHECK_FALSE(imports.count("dead"));
  CHECK_FALSE(imports.count("ai.graphcore"));
  CHECK(model->findFunction("local", "Outer")->opsetImports() ==
        std::map<std::string, int64_t>{{"", 17}, {"local", 1}});
  CHECK(report["opset_imports_removed"].size() == 3);

  // The report's edit counts are the edits made.
  CHECK(report["changed"] == true);
  CHECK(report["edits"]["initializers_removed"] == 2);
  CHECK(report["edits"]["functions_removed"] == 2);
  CHECK(report["edits"]["opset_imports_changed"] == 3);
  CHECK(report["nodes_removed"] == 0);

  checkValid(*model);
  checkSameMaths(proto, *model);

  // A second run finds nothing: the same bytes.
  onnx::ModelProto written;
  REQUIRE(written.ParseFromString(serialize(*model)));
  auto again = runPass(written, passes::createPrunePass({}), &report);
  CHECK(report["changed"] == false);
  CHECK(serialize(*again) == serialize(*model));
}

TEST_CASE("prune keeps each kind when told to", "[prune]") {
  auto proto = modelWithStray();
  passes::PruneOptions keepAll{false, false, false, false};
  nlohmann::json report;
  auto model = runPass(proto, passes::createPrunePass(keepAll), &report);
  CHECK(report["changed"] == false);
  CHECK(serialize(*model) == proto.SerializeAsString());

  passes::PruneOptions onlyFunctions{false, true, false, false};
  model = runPass(proto, passes::createPrunePass(onlyFunctions), &report);
  CHECK(functionNames(*model) == std::set<std::string>{"Inner", "Outer"});
  CHECK(model->graph().findLocal("unused") != nullptr);
  CHECK(model->opsetImports().count("dead"));
}

TEST_CASE("prune leaves graph inputs and outputs that are initializers", "[prune]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X, float[2] B) => (float[2] Y, float[2] C) <float[2] B = {1, 2}, float[2] C = {3, 4}> {
  Y = Relu(X)
}
)");
  nlohmann::json report;
  auto model = runPass(proto, passes::createPrunePass({}), &report);
  CHECK(model->graph().initializers().size() == 2);
  CHECK(report["changed"] == false);
}
