#include <catch2/catch.hpp>

#include "loader.h"
#include "models.h"
#include "rewriter.h"
#include "support.h"
#include "verifier.h"
#include "writer.h"

using namespace graphrw;
using namespace graphrw::ir;

TEST_CASE("the rewriter keeps use-lists and name tables right, and counts", "[rewriter]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  Graph& g = model->graph();
  Rewriter rw(*model);
  Value* h = g.findLocal("H");
  Node* call = g.nodes().back().get();

  // Insert Neg(H) before the call and make the call read it.
  Node* neg = rw.createNode(g, call, {"neg", "Neg", "", {h}, {"H"}});
  Value* negOut = neg->output(0);
  CHECK(negOut->name() == "H_1");  // fresh: H is taken
  CHECK(neg->name() == "neg");
  CHECK(h->uses().size() == 2);
  rw.setInput(call, 0, negOut);
  CHECK(h->uses().size() == 1);
  CHECK(negOut->uses().size() == 1);
  CHECK(verify(*model).empty());

  // Rename, then replace all uses back, then erase.
  CHECK(rw.renameValue(negOut, "negated") == "negated");
  CHECK(g.findLocal("negated") == negOut);
  CHECK(g.findLocal("H_1") == nullptr);
  rw.replaceAllUsesWith(negOut, h);
  CHECK(negOut->uses().empty());
  rw.eraseNode(neg);
  CHECK(g.nodeCount() == 2);
  CHECK(g.findLocal("negated") == nullptr);
  CHECK_FALSE(g.names().contains("negated"));
  CHECK(verify(*model).empty());

  const auto& c = rw.counts();
  CHECK(c.nodesAdded == 1);
  CHECK(c.nodesRemoved == 1);
  CHECK(c.valuesRenamed == 1);
  CHECK(c.nodesChanged == 2);  // setInput twice
  CHECK(c.any());
}

TEST_CASE("replaceAllUsesWith reaches uses in subgraphs and graph outputs", "[rewriter]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool C, float[2] X) => (float[2] Y, float[2] Z) {
  Z = Abs(X)
  Y = If (C) <then_branch = g1 () => (float[2] t) { t = Relu(Z) }, else_branch = g2 () => (float[2] e) { e = Neg(Z) }>
}
)"));
  Graph& g = model->graph();
  Rewriter rw(*model);
  Value* z = g.findLocal("Z");
  Value* x = g.findLocal("X");
  rw.replaceAllUsesWith(z, x, /*graphOutputs=*/true);
  CHECK(z->uses().empty());
  CHECK(z->graphOutputCount() == 0);
  CHECK(x->uses().size() == 3);
  CHECK(g.outputs()[1].value == x);
  CHECK(verify(*model).empty());
}

TEST_CASE("erasing a node whose output is used is refused", "[rewriter]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  Rewriter rw(*model);
  CHECK_THROWS_WITH(rw.eraseNode(model->graph().nodes().front().get()), Catch::Contains("still used"));
}

TEST_CASE("erasing a node drops its outputs' value_info entries and keeps the others", "[rewriter]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4] X) => (float[4] Y) {
  A = Abs (X)
  B = Neg (X)
  Y = Relu (X)
}
)");
  for (const char* name : {"A", "B"}) {
    auto* vi = proto.mutable_graph()->add_value_info();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  }
  auto model = loadModel(proto);
  Graph& g = model->graph();
  Rewriter rw(*model);
  rw.eraseNode(g.nodes().front().get());  // Abs, producing A
  REQUIRE(g.valueInfo().size() == 1);
  CHECK(g.valueInfo()[0].value->name() == "B");
  Node* neg = g.nodes().front().get();
  rw.replaceAllUsesWith(neg->output(0), g.findLocal("X"));
  Node* relu = g.nodes().back().get();
  rw.replaceAllUsesWith(relu->output(0), g.findLocal("X"), /*graphOutputs=*/true);
  rw.eraseNode(relu);
  CHECK(g.valueInfo().size() == 1);  // Relu's output had none: nothing else goes
  rw.eraseNode(neg);
  CHECK(g.valueInfo().empty());
  CHECK(verify(*model).empty());
}
