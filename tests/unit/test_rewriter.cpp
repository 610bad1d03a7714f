#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <set>

#include "io/loader.h"
#include "io/writer.h"
#include "ir/rewriter.h"
#include "ir/verifier.h"
#include "ir_corruptor.h"
#include "models.h"
#include "support.h"
#include "support/error.h"

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
  CHECK(c.nodesChanged == 1);  // the call, edited twice, counted once (neg is new)
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

TEST_CASE("rewriter attribute edits: tensors and subgraphs built as the loader builds them, renames", "[rewriter]") {
  auto model = loadModel(test::parseModel(test::kNegModel));
  Graph& g = model->graph();
  Rewriter rw(*model);
  Node* neg = g.nodes().front().get();

  onnx::AttributeProto callee;
  callee.set_name("callee");
  callee.set_type(onnx::AttributeProto::GRAPH);
  auto* body = callee.mutable_g();
  body->set_name("body");
  body->add_input()->set_name("b_in");
  body->add_output()->set_name("b_out");
  auto* inner = body->add_node();
  inner->set_op_type("Abs");
  inner->add_input("b_in");
  inner->add_output("b_out");
  rw.setAttribute(neg, callee);
  REQUIRE(neg->subgraphs().size() == 1);
  Graph* sub = neg->subgraphs()[0];
  CHECK(sub->parentNode() == neg);
  CHECK(sub->parent() == &g);
  CHECK(sub->nodeCount() == 1);
  CHECK(sub->residual().name() == "body");

  onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(onnx::AttributeProto::TENSOR);
  value.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value.mutable_t()->add_float_data(1.5f);
  rw.setAttribute(neg, value);
  REQUIRE(neg->attribute("value")->t());
  CHECK(neg->attribute("value")->t()->proto().float_data(0) == 1.5f);

  size_t before = rw.counts().nodesChanged;
  CHECK(rw.renameAttribute(neg, "value", "other"));
  CHECK(neg->attribute("value") == nullptr);
  CHECK(neg->attribute("other") != nullptr);
  CHECK_FALSE(rw.renameAttribute(neg, "missing", "x"));
  CHECK_THROWS(rw.renameAttribute(neg, "other", "callee"));
  CHECK(rw.counts().nodesChanged == before);  // a node already edited counts once
  CHECK(verify(*model).empty());
}

TEST_CASE("equal attributes share one proto: loaded or set on many nodes, and a rename copies first", "[rewriter]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2,3] X) => (float[3,2] Y, float[3,2] Z) {
  A = Transpose <perm = [1, 0]> (X)
  B = Transpose <perm = [1, 0]> (X)
  Y = Neg (A)
  Z = Neg (B)
}
)"));
  Graph& g = model->graph();
  std::vector<Node*> n;
  for (const auto& node : g.nodes()) n.push_back(node.get());
  // Loaded: the two equal perm attributes are one proto.
  CHECK(&n[0]->attribute("perm")->proto() == &n[1]->attribute("perm")->proto());

  Rewriter rw(*model);
  onnx::AttributeProto scale;
  scale.set_name("scale");
  scale.set_type(onnx::AttributeProto::FLOAT);
  scale.set_f(-1.0f);
  rw.setAttribute(n[2], scale);
  rw.setAttribute(n[3], scale);
  const Attribute* s2 = n[2]->attribute("scale");
  const Attribute* s3 = n[3]->attribute("scale");
  CHECK(&s2->proto() == &s3->proto());
  scale.set_f(2.0f);  // a different value is not shared
  rw.setAttribute(n[3], scale);
  CHECK(n[3]->attribute("scale")->proto().f() == 2.0f);
  CHECK(n[2]->attribute("scale")->proto().f() == -1.0f);

  // Renaming one copies its proto: the other keeps its name.
  CHECK(rw.renameAttribute(n[0], "perm", "order"));
  CHECK(n[0]->attribute("order")->proto().name() == "order");
  REQUIRE(n[1]->attribute("perm") != nullptr);
  CHECK(n[1]->attribute("perm")->proto().name() == "perm");
  CHECK(n[1]->attribute("perm")->proto().ints_size() == 2);
}

TEST_CASE("an attribute is 16 bytes, its tensors and graphs held apart and read through t(), g(), tensors(), graphs()",
          "[rewriter]") {
  // A million-node graph has about a million attributes, most of them ints and floats:
  // the shared proto (8 bytes) plus one pointer to the rarely used IR objects.
  STATIC_REQUIRE(sizeof(Attribute) == 16);
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool c, float[2] X) => (float[2] Y, float[2] Z) {
  K = Constant <value = float[2] {1.5, 2.5}> ()
  Y = Add (X, K)
  Z = If (c) <then_branch = t () => (float[2] a) { a = Neg (X) }, else_branch = e () => (float[2] b) { b = Abs (X) }>
}
)"));
  std::vector<const Node*> n;
  for (const auto& node : model->graph().nodes()) n.push_back(node.get());
  const Attribute* value = n[0]->attribute("value");
  REQUIRE(value->t());
  CHECK(value->t()->proto().float_data(1) == 2.5f);
  CHECK(!value->g());
  CHECK(value->tensors().empty());
  CHECK(value->graphs().empty());
  const Attribute* then = n[2]->attribute("then_branch");
  REQUIRE(then->g());
  CHECK(!then->t());
  CHECK(then->g()->nodes().front()->opType() == "Neg");
  CHECK(n[2]->attribute("else_branch")->g()->nodes().front()->opType() == "Abs");
  CHECK(n[2]->subgraphs().size() == 2);
  CHECK(verify(*model).empty());
}

TEST_CASE("rewriter reshapes outputs and restores topological order", "[rewriter]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4] X) => (float[4] Y) {
  a, b = Split <num_outputs = 2> (X)
  Y = Neg (a)
}
)"));
  Graph& g = model->graph();
  Rewriter rw(*model);
  Node* split = g.nodes().front().get();
  Value* a = split->output(0);
  // Keep output 0, drop the unused output 1, add a fresh third one.
  rw.reshapeOutputs(split, {0, -1, -1}, {"", "", "extra"});
  CHECK(split->output(0) == a);
  CHECK(split->output(1) == nullptr);
  REQUIRE(split->output(2) != nullptr);
  CHECK(split->output(2)->name() == "extra");
  CHECK(split->output(2)->producer() == split);
  CHECK(g.findLocal("b") == nullptr);
  CHECK_THROWS(rw.reshapeOutputs(split, {-1, -1, 2}, {}));  // output 0 is read by Neg

  // A node created at the end that the first node reads: sorting moves it first.
  Node* neg = g.nodes().back().get();
  Node* abs = rw.createNode(g, nullptr, {"abs", "Abs", "", {g.findLocal("X")}, {"ax"}});
  rw.setInput(split, 0, abs->output(0));
  CHECK_FALSE(verify(*model).empty());
  CHECK(rw.sortTopologically(g));
  CHECK(g.nodes().front().get() == abs);
  CHECK(g.nodes().back().get() == neg);  // otherwise the order stays
  CHECK(verify(*model).empty());
  CHECK_FALSE(rw.sortTopologically(g));
}

TEST_CASE("every edit the rewriter makes is counted: initializers, outputs, functions, opsets, value_info",
          "[rewriter]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1, "unused" : 1]>
main (float[2] X) => (float[2] Y) <float[2] ghost> {
  A = Relu(X)
  Y = local.F(A)
}
<domain: "local", opset_import: ["" : 17, "spare" : 1]>
F (x) => (y) {
  y = Neg(x)
}
)"));
  Graph& g = model->graph();
  Rewriter rw(*model);
  CHECK_FALSE(rw.counts().any());

  // An initializer added and removed again.
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_float_data(1);
  t.add_float_data(2);
  Value* w = rw.addInitializer(g, "W", std::make_unique<Tensor>(t));
  CHECK(w->initializer()->name() == "W");
  CHECK(rw.counts().initializersAdded == 1);
  CHECK(rw.counts().any());
  rw.eraseInitializer(w);
  CHECK(g.findLocal("W") == nullptr);
  CHECK(rw.counts().initializersRemoved == 1);
  CHECK_THROWS(rw.eraseInitializer(g.findLocal("X")));  // a graph input is not an unused initializer

  // A graph output moved to another value.
  rw.setGraphOutput(g, 0, g.findLocal("A"));
  CHECK(g.outputs()[0].value->name() == "A");
  CHECK(rw.counts().graphOutputsChanged == 1);

  // value_info of a value nothing defines goes, and the value with it.
  Value* ghost = g.findLocal("ghost");
  REQUIRE(ghost);
  CHECK(rw.removeValueInfo(g, ghost) == 1);
  CHECK(g.findLocal("ghost") == nullptr);
  CHECK(g.valueInfo().empty());
  CHECK(rw.counts().valueInfoRemoved == 1);

  // Opset imports, in the model's scope and in a function's.
  const Function* f = model->findFunction("local", "F");
  REQUIRE(f);
  rw.setOpsetImport(g, "ai.graphcore", 1);
  CHECK(model->opsetVersion("ai.graphcore") == 1);
  rw.setOpsetImport(g, "ai.graphcore", 1);  // no change, not counted
  CHECK(rw.counts().opsetImportsChanged == 1);
  CHECK(rw.removeOpsetImport(g, "unused"));
  CHECK_FALSE(model->opsetVersion("unused"));
  CHECK(rw.removeOpsetImport(f->body(), "spare"));
  CHECK_FALSE(f->opsetImports().count("spare"));
  CHECK_FALSE(rw.removeOpsetImport(f->body(), "spare"));
  CHECK(rw.counts().opsetImportsChanged == 3);

  // Functions.
  rw.removeFunction(f);
  CHECK(model->functions().empty());
  CHECK(rw.counts().functionsRemoved == 1);
  CHECK(rw.counts().nodesAdded == 0);
}

TEST_CASE("every kind of edit the Rewriter counts is a report key documented in docs/cli.md", "[rewriter][docs]") {
  std::string doc = graphrw::test::readFile(std::filesystem::path(GRAPHRW_SOURCE_DIR) / "docs" / "cli.md");
  std::set<std::string> keys;
  for (const auto& f : ChangeCounts::fields()) {
    CHECK(keys.insert(f.key).second);  // one row per key
    INFO(f.key);
    CHECK(doc.find(std::string("`") + f.key + "`") != std::string::npos);
  }
  // Each member is in the table: a count left out of it would be missing from reports and `changed`.
  ChangeCounts c;
  CHECK_FALSE(c.any());
  size_t members = sizeof(ChangeCounts) / sizeof(size_t);
  CHECK(ChangeCounts::fields().size() == members);
  for (const auto& f : ChangeCounts::fields()) {
    ChangeCounts one;
    one.*f.count = 1;
    CHECK(one.any());
  }
}

TEST_CASE("sortTopologically: reads from subgraphs count, the order is kept where it can be, and a cycle is an error",
          "[rewriter]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool c, float[2] X) => (float[2] Y, float[2] Z) {
  Y = If (c) <then_branch = t () => (float[2] ty) { ty = Neg (late) },
      else_branch = e () => (float[2] ey) { ey = Abs (X) }>
  p = Relu (X)
  q = Sigmoid (X)
  late = Tanh (X)
  Z = Add (p, q)
}
)"));
  Graph& g = model->graph();
  Rewriter rw(*model);
  auto names = [&] {
    std::vector<std::string> out;
    for (const auto& n : g.nodes()) out.push_back(n->opType());
    return out;
  };
  // The If's then-branch reads `late`, so the If waits for Tanh; the earliest
  // ready node goes first each time (Kahn's algorithm, stable): Relu and
  // Sigmoid keep their order, Add stays last.
  CHECK(rw.sortTopologically(g));
  CHECK(names() == std::vector<std::string>{"Relu", "Sigmoid", "Tanh", "If", "Add"});
  CHECK_FALSE(rw.sortTopologically(g));
  // Relu reads Add's output, which reads Relu's: a cycle.
  Node* relu = nullptr;
  for (const auto& n : g.nodes())
    if (n->opType() == "Relu") relu = n.get();
  rw.setInput(relu, 0, g.findLocal("Z"));
  try {
    rw.sortTopologically(g);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Internal);
    CHECK_THAT(e.what(), Catch::Contains("cycle"));
  }
}

TEST_CASE("a node created by one rewriter counts as changed in another", "[rewriter]") {
  // With stamps, and with the set a process falls back to after 2^24 - 1 Rewriters.
  const bool stamped = GENERATE(true, false);
  auto model = loadModel(test::parseModel(test::kSmallModel));
  Graph& g = model->graph();
  Value* h = g.findLocal("H");
  Node* call = g.nodes().back().get();
  Rewriter first(*model);
  if (!stamped) testing::Corruptor::dropStamp(first);
  Node* neg = first.createNode(g, call, {"neg", "Neg", "", {h}, {"N"}});
  first.renameNode(neg, "neg1");
  CHECK(first.counts().nodesChanged == 0);  // its own node
  {
    Rewriter second(*model);  // alive beside the first: each knows only its own nodes
    if (!stamped) testing::Corruptor::dropStamp(second);
    Node* abs = second.createNode(g, call, {"abs", "Abs", "", {neg->output(0)}, {"A"}});
    second.renameNode(neg, "neg2");
    second.renameNode(abs, "abs2");
    CHECK(second.counts().nodesChanged == 1);  // neg; abs is its own
    second.eraseNode(abs);
  }
  first.renameNode(call, "call1");
  CHECK(first.counts().nodesChanged == 1);
  // A later rewriter's nodes (one may sit in the erased node's block) are not the first's.
  Rewriter third(*model);
  if (!stamped) testing::Corruptor::dropStamp(third);
  Node* relu = third.createNode(g, call, {"relu", "Relu", "", {h}, {"R"}});
  third.renameNode(relu, "relu2");
  CHECK(third.counts().nodesChanged == 0);
  first.renameNode(relu, "relu3");
  CHECK(first.counts().nodesChanged == 2);
  third.renameNode(neg, "neg3");
  CHECK(third.counts().nodesChanged == 1);
  CHECK(verify(*model).empty());
}

TEST_CASE("values of one type share the model's one copy of it", "[rewriter][types]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, float[2, 3] y, int64[4] z) => (float[2, 3] s) {
  s = Add (x, y)
}
)"));
  Graph& g = model->graph();
  Value* x = g.findLocal("x");
  Value* y = g.findLocal("y");
  Value* z = g.findLocal("z");
  Value* s = g.findLocal("s");
  REQUIRE(x->type());
  CHECK(x->type() == y->type());  // declared apart, one proto
  CHECK(x->type() == s->type());
  CHECK(x->type() != z->type());
  CHECK(z->type()->tensor_type().elem_type() == onnx::TensorProto::INT64);
  Rewriter rw(*model);
  onnx::TypeProto wider = *x->type();
  wider.mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  const onnx::TypeProto* before = x->type();
  rw.setType(x, wider);
  CHECK(x->type() != before);
  CHECK(x->type()->tensor_type().shape().dim(0).dim_param() == "batch");
  CHECK(y->type() == before);  // the others keep theirs, unchanged
  CHECK_FALSE(y->type()->tensor_type().shape().dim(0).has_dim_param());
  rw.setType(y, wider);
  CHECK(y->type() == x->type());
  rw.forgetType(x);
  CHECK(x->type() == nullptr);
  CHECK(y->type()->tensor_type().shape().dim(0).dim_param() == "batch");
}

TEST_CASE("room reserved for changes leaves the change count exact", "[rewriter]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  Graph& g = model->graph();
  Rewriter rw(*model);
  rw.expectChanges(100000);
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  REQUIRE(nodes.size() >= 2);
  rw.renameNode(nodes[0], "first");
  rw.renameNode(nodes[0], "again");
  rw.renameNode(nodes[1], "second");
  CHECK(rw.counts().nodesChanged == 2);
  rw.expectChanges(10);  // smaller than the room there is: nothing lost
  rw.renameNode(nodes[1], "second2");
  CHECK(rw.counts().nodesChanged == 2);
}

TEST_CASE("an initializer becomes a Constant node: name, uses and bytes kept, counted", "[rewriter]") {
  auto model = graphrw::loadModel(graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (int64[2] I) => (int64[2] Y, int64[2] Z) <int64[2] P = {7, 9}> {
  Y = Add(I, P)
  Z = Mul(P, P)
}
)"));
  Graph& g = model->graph();
  Value* p = g.findLocal("P");
  Rewriter rw(*model);
  Node* c = rw.initializerToConstant(p);
  CHECK(c->opType() == "Constant");
  CHECK(c->name() == "P");
  CHECK(p->producer() == c);
  CHECK_FALSE(p->isInitializer());
  CHECK(p->uses().size() == 3);
  CHECK(g.initializers().empty());
  CHECK(g.nodes().front().get() == c);
  CHECK(rw.counts().initializersRemoved == 1);
  CHECK(rw.counts().nodesAdded == 1);
  CHECK(verify(*model).empty());
  onnx::ModelProto out;
  REQUIRE(out.ParseFromString(graphrw::serialize(*model)));
  REQUIRE(out.graph().node(0).op_type() == "Constant");
  const auto& t = out.graph().node(0).attribute(0).t();
  CHECK(t.dims_size() == 1);
  CHECK(t.data_type() == onnx::TensorProto::INT64);
  std::vector<int64_t> values(t.int64_data().begin(), t.int64_data().end());
  if (values.empty() && t.raw_data().size() == 16) {
    values.resize(2);
    std::memcpy(values.data(), t.raw_data().data(), 16);
  }
  CHECK(values == std::vector<int64_t>{7, 9});
  CHECK(out.graph().initializer_size() == 0);
  // Not an initializer (any more), or a graph input: refused as a defect.
  CHECK_THROWS_AS(rw.initializerToConstant(p), graphrw::Error);
}
