#include <catch2/catch.hpp>

#include "helpers.h"
#include "io/writer.h"
#include "passes/strip_doc/strip_doc.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::test;
using namespace graphrw::passes;

namespace {

// A model with a doc string on the model, the main graph, a node, a subgraph
// and its node, a local function and a node of its body.
onnx::ModelProto documented() {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
main (float[2] X, bool c) => (float[2] Y) {
  A = Relu(X)
  B = local.F(A)
  Y = If(c) <then_branch = g1 () => (float[2] t) { t = Neg(B) },
              else_branch = g2 () => (float[2] e) { e = Identity(B) }>
}
<domain: "local", opset_import: ["" : 17]>
F (x) => (y) {
  y = Abs(x)
}
)");
  m.set_doc_string("exported by a test");
  m.mutable_graph()->set_doc_string("the main graph");
  m.mutable_graph()->mutable_node(0)->set_doc_string("File \"model.py\", line 12, in forward");
  auto* branch = m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->mutable_g();
  branch->set_doc_string("then");
  branch->mutable_node(0)->set_doc_string("negates");
  m.mutable_functions(0)->set_doc_string("a function");
  m.mutable_functions(0)->mutable_node(0)->set_doc_string("in a body");
  return m;
}

}  // namespace

TEST_CASE("strip-doc removes doc strings everywhere, and nothing else", "[strip-doc]") {
  const auto before = documented();
  nlohmann::json report;
  auto model = runPass(before, createStripDocPass({}), &report);
  const auto after = toProto(*model);
  CHECK(after.doc_string().empty());
  CHECK(after.graph().doc_string().empty());
  for (const auto& n : after.graph().node()) CHECK(n.doc_string().empty());
  const auto& branch = after.graph().node(2).attribute(0).g();
  CHECK(branch.doc_string().empty());
  CHECK(branch.node(0).doc_string().empty());
  CHECK(after.functions(0).doc_string().empty());
  CHECK(after.functions(0).node(0).doc_string().empty());
  // Counted by kind, and by the Rewriter (verify-each compared them with the fingerprint).
  const auto& removed = report["doc_strings_removed"];
  CHECK(removed["nodes"] == 3);
  CHECK(removed["graphs"] == 2);
  CHECK(removed["functions"] == 1);
  CHECK(removed["model"] == 1);
  CHECK(report["edits"]["doc_strings_changed"] == 7);
  CHECK(report["changed"] == true);
  // Nothing else: the same model once the doc strings are cleared by hand.
  auto expected = before;
  expected.clear_doc_string();
  expected.mutable_graph()->clear_doc_string();
  expected.mutable_graph()->mutable_node(0)->clear_doc_string();
  auto* g = expected.mutable_graph()->mutable_node(2)->mutable_attribute(0)->mutable_g();
  g->clear_doc_string();
  g->mutable_node(0)->clear_doc_string();
  expected.mutable_functions(0)->clear_doc_string();
  expected.mutable_functions(0)->mutable_node(0)->clear_doc_string();
  std::string diff;
  bool same = sameMessage(expected, after, &diff);
  INFO(diff);
  CHECK(same);
  checkSameMaths(before, *model);
}

TEST_CASE("strip-doc keeps what it is told to keep, and a model without doc strings is unchanged", "[strip-doc]") {
  StripDocOptions keep;
  keep.model = false;
  keep.functions = false;
  nlohmann::json report;
  auto model = runPass(documented(), createStripDocPass(keep), &report);
  const auto after = toProto(*model);
  CHECK(after.doc_string() == "exported by a test");
  CHECK(after.functions(0).doc_string() == "a function");
  CHECK(after.functions(0).node(0).doc_string().empty());  // a node of a body is a node
  CHECK(after.graph().doc_string().empty());

  nlohmann::json again;
  auto stripped = runPass(toProto(*runPass(documented(), createStripDocPass({}))), createStripDocPass({}), &again);
  CHECK(again["changed"] == false);
  CHECK(again["matched"] == 0);
  CHECK(toProto(*stripped).doc_string().empty());
}
