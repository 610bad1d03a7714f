#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "io/loader.h"
#include "io/writer.h"
#include "ir/inliner.h"
#include "ir/ir.h"
#include "ir/rewriter.h"
#include "ir/verifier.h"
#include "models.h"
#include "support.h"

using namespace graphrw;

namespace {
std::vector<std::string> initializerNames(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const auto& init : g.initializers()) names.push_back(init.value->name().str());
  return names;
}
// Y = Neg(X): a graph to grow value by value.
std::unique_ptr<ir::Model> oneNeg() { return loadModel(test::parseModel(test::kNegModel)); }
}  // namespace

// A value finds its initializer by its index in the graph's list: removing one
// moves the later ones down, and each must still find its own tensor.
TEST_CASE("values find their initializers after others are removed and added", "[value_layout]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) <float[2] A = {1, 1}, float[2] B = {2, 2}, float[2] C = {3, 3}, float[2] D = {4, 4},
    float[2] U = {5, 5}> {
  S = Sum (X, A, B, D)
  Y = Add (S, C)
}
)"));
  auto& g = model->graph();
  ir::Rewriter rw(*model);
  REQUIRE(initializerNames(g) == std::vector<std::string>{"A", "B", "C", "D", "U"});
  ir::Value* unused = g.findLocal("U");
  rw.eraseInitializer(unused);  // the last one
  ir::Node* sum = g.findLocal("S")->producer();
  ir::Value* b = g.findLocal("B");
  rw.setInput(sum, 2, g.findLocal("X"));
  rw.eraseInitializer(b);  // one in the middle: C and D move down
  CHECK(initializerNames(g) == std::vector<std::string>{"A", "C", "D"});
  for (const char* name : {"A", "C", "D"}) {
    const ir::Value* v = g.findLocal(name);
    REQUIRE(v->isInitializer());
    CHECK(v->initializer()->name() == name);
  }
  CHECK_FALSE(g.findLocal("X")->isInitializer());
  onnx::TensorProto t;
  t.set_name("E");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1);
  t.add_float_data(6);
  ir::Value* e = rw.addInitializer(g, "E", std::make_unique<ir::Tensor>(t));
  CHECK(e->initializer()->name() == "E");
  CHECK(initializerNames(g) == std::vector<std::string>{"A", "C", "D", "E"});
}

TEST_CASE("a value is 72 bytes and a node 128", "[value_layout]") {
  // A million-value graph: each 8 bytes is 8 MB. Names are 8-byte handles (ir/name.h).
  STATIC_REQUIRE(sizeof(ir::Value) == 72);
  STATIC_REQUIRE(sizeof(ir::Node) == 128);
}

// A value_info entry holds the model's interned type, not a TypeProto of its
// own, and its other fields only when it has some.
TEST_CASE("value_info entries: interned types, other fields kept only when present", "[value_layout]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) <float[2] H, float[2] K> {
  H = Neg (X)
  K = Abs (H)
  Y = Neg (K)
}
)");
  proto.mutable_graph()->mutable_value_info(0)->set_doc_string("hidden");
  const onnx::ValueInfoProto original = proto.graph().value_info(0);
  auto model = loadModel(proto);
  auto& g = model->graph();
  REQUIRE(g.valueInfo().size() == 2);
  const ir::ValueInfo& h = g.valueInfo()[0];
  const ir::ValueInfo& k = g.valueInfo()[1];
  CHECK(h.type() == h.value->type());
  CHECK(h.type() == k.type());  // one copy of float[2]
  REQUIRE(h.rest() != nullptr);
  CHECK(h.rest()->doc_string() == "hidden");
  CHECK_FALSE(h.rest()->has_type());
  CHECK(h.rest()->name().empty());
  CHECK(k.rest() == nullptr);
  std::string diff;
  CHECK(test::sameMessage(h.proto(), original, &diff));
  INFO(diff);

  ir::Rewriter rw(*model);
  onnx::TypeProto same = *k.type();
  rw.declareType(g, k.value, same);
  CHECK(rw.counts().typesDeclared == 0);  // the same type: no change
  onnx::TypeProto wider = same;
  wider.mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("n");
  rw.declareType(g, k.value, wider);
  CHECK(rw.counts().typesDeclared == 1);
  CHECK(g.valueInfo()[1].type() == k.value->type());
  CHECK(g.valueInfo()[1].type()->tensor_type().shape().dim(0).dim_param() == "n");
  CHECK(g.valueInfo()[0].type()->tensor_type().shape().dim(0).dim_value() == 2);
}

TEST_CASE("value_info copied from another model's body is interned in the target", "[value_layout]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "d" : 1]>
main (float[2] X) => (float[2] Y) <float[2] T> {
  T = Abs (X)
  Y = d.F (T)
}
)"));
  ir::Value* y = model->graph().findLocal("Y");
  {
    auto bodyProto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
body (float[2] A) => (float[2] B) <float[2] M> {
  M = Neg (A)
  B = Abs (M)
}
)");
    bodyProto.mutable_graph()->mutable_value_info(0)->set_doc_string("inner");
    auto other = loadModel(bodyProto);
    ir::Rewriter rw(*model);
    inlineBody(rw, y->producer(), other->graph(), {}, "f");
  }  // the body's model, and its interned types, are gone
  const auto& entries = model->graph().valueInfo();
  REQUIRE(entries.size() == 2);
  const ir::ValueInfo& copied = entries[1];
  CHECK(copied.value->name() == "f/M");
  REQUIRE(copied.type() != nullptr);
  CHECK(copied.type() == entries[0].type());  // the target's own float[2]
  REQUIRE(copied.rest() != nullptr);
  CHECK(copied.rest()->doc_string() == "inner");
}

// A graph of fewer than 32 values is searched by a scan, a larger one through
// its index: built when the graph grows past the threshold, kept right by
// renames and erasures on either side of it.
TEST_CASE("values are found by name in small graphs and after their index is built", "[value_layout]") {
  auto model = oneNeg();
  auto& g = model->graph();
  ir::Rewriter rw(*model);
  ir::Value* x = g.findLocal("X");
  REQUIRE(x != nullptr);
  CHECK(g.findLocal("Y") != nullptr);
  CHECK(g.findLocal("Z") == nullptr);
  // A rename while scanning: the old name is gone, the new one found.
  std::vector<ir::Value*> made;
  auto add = [&](int i) {
    ir::Node* n = rw.createNode(g, nullptr, {"", "Abs", "", {x}, {"v" + std::to_string(i)}});
    made.push_back(n->output(0));
  };
  for (int i = 0; i < 10; ++i) add(i);
  CHECK(rw.renameValue(made[3], "renamed3") == "renamed3");
  CHECK(g.findLocal("v3") == nullptr);
  CHECK(g.findLocal("renamed3") == made[3]);
  // A fresh name never repeats a scanned one.
  CHECK(rw.renameValue(made[4], "v5") != "v5");
  rw.eraseNode(made[9]->producer());
  made.pop_back();
  CHECK(g.findLocal("v9") == nullptr);
  // Past the threshold: the index holds everything added before it too.
  for (int i = 10; i < 60; ++i) add(i);
  for (ir::Value* v : made) CHECK(g.findLocal(v->name()) == v);
  CHECK(g.findLocal("X") == x);
  const std::string old40 = made[40]->name().str(), old20 = made[20]->name().str();
  CHECK(rw.renameValue(made[40], "renamed40") == "renamed40");
  CHECK(g.findLocal("renamed40") == made[40]);
  CHECK(g.findLocal(old40) == nullptr);
  rw.eraseNode(made[20]->producer());
  CHECK(g.findLocal(old20) == nullptr);
  CHECK(g.findLocal(made[21]->name()) == made[21]);
}

TEST_CASE("a small graph still refuses a value defined twice", "[value_layout]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  A = Neg (X)
  A = Abs (X)
  Y = Neg (A)
}
)");
  CHECK_THROWS_WITH(loadModel(proto), Catch::Contains("'A' is produced twice"));
}

// Erased values with value_info entries retire and their entries go in
// sweeps: every read of the list must still see exactly the live entries, in
// order, across sweeps and with new values made in between.
TEST_CASE("value_info entries of erased values are gone at every read, across sweeps", "[value_layout]") {
  auto model = oneNeg();
  auto& g = model->graph();
  ir::Rewriter rw(*model);
  ir::Value* x = g.findLocal("X");
  onnx::TypeProto type;
  type.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  std::vector<ir::Node*> nodes;
  for (int i = 0; i < 400; ++i) {
    ir::Node* n = rw.createNode(g, nullptr, {"", "Abs", "", {x}, {"v" + std::to_string(i)}});
    rw.declareType(g, n->output(0), type);
    nodes.push_back(n);
  }
  auto live = [&] {
    std::vector<std::string> names;
    for (const auto& e : g.valueInfo()) names.push_back(e.value->name().str());
    return names;
  };
  std::vector<std::string> expected;
  for (int i = 0; i < 400; ++i) expected.push_back("v" + std::to_string(i));
  CHECK(live() == expected);
  // Erase every odd one (200: past the sweep threshold of 64 more than once),
  // making a new declared value after each: any address reused by it must not
  // lose its entry, and no erased value's entry may be read.
  std::vector<std::string> remaining;
  for (int i = 0; i < 400; ++i) {
    if (i % 2 == 0) {
      remaining.push_back("v" + std::to_string(i));
      continue;
    }
    rw.eraseNode(nodes[static_cast<size_t>(i)]);
    ir::Node* n = rw.createNode(g, nullptr, {"", "Neg", "", {x}, {"w" + std::to_string(i)}});
    rw.declareType(g, n->output(0), type);
    if (i == 201) CHECK(g.valueInfo().size() == 400);  // a read between sweeps: one entry a live value
  }
  for (int i = 1; i < 400; i += 2) remaining.push_back("w" + std::to_string(i));
  std::vector<std::string> got = live();
  std::sort(got.begin(), got.end());
  std::sort(remaining.begin(), remaining.end());
  CHECK(got == remaining);
  for (const auto& e : g.valueInfo()) CHECK(g.findLocal(e.value->name()) == e.value);
  CHECK(verify(*model).empty());
}

// A graph's residual (name, doc_string, ...) is the model's one copy of it:
// the callees of one outlined body, or branches named alike, hold one. An edit
// to one graph's gives it its own.
TEST_CASE("graphs with equal residuals share one copy, and editing one leaves the others", "[value_layout]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool c, float[2] X) => (float[2] Y, float[2] Z) {
  Y = If (c) <then_branch = g1 () => (float[2] a) { a = Neg (X) }, else_branch = g1 () => (float[2] b) { b = Abs (X) }>
  Z = If (c) <then_branch = g1 () => (float[2] d) { d = Neg (X) }, else_branch = g2 () => (float[2] e) { e = Abs (X) }>
}
)");
  const std::string original = proto.SerializeAsString();
  auto model = loadModel(proto);
  ir::Rewriter rw(*model);
  std::vector<ir::Graph*> branches;
  for (const auto& n : model->graph().nodes())
    for (ir::Graph* g : n->subgraphs()) branches.push_back(g);
  REQUIRE(branches.size() == 4);
  CHECK(branches[0]->residual().name() == "g1");
  CHECK(&branches[0]->residual() == &branches[1]->residual());
  CHECK(&branches[0]->residual() == &branches[2]->residual());
  CHECK(&branches[0]->residual() != &branches[3]->residual());
  CHECK(branches[3]->residual().name() == "g2");
  CHECK(serialize(*model) == original);
  rw.setDocString(*branches[1], "edited");
  CHECK(branches[1]->residual().doc_string() == "edited");
  CHECK(branches[1]->residual().name() == "g1");
  CHECK_FALSE(branches[0]->residual().has_doc_string());
  CHECK_FALSE(branches[2]->residual().has_doc_string());
  rw.setDocString(*branches[1], "");  // back to what the others hold: one copy again
  CHECK(&branches[0]->residual() == &branches[1]->residual());
  CHECK(serialize(*model) == original);
}

// A subgraph may declare an outer value in its value_info: erasing that value
// from its own graph drops the subgraph's entry too (it would name a value
// that is gone: written with an empty name, or read after it was freed).
TEST_CASE("erasing a value drops the value_info entries subgraphs hold for it", "[value_layout]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool c, float[2] X) => (float[2] Z, float[2] Y) {
  A = Neg (X)
  Z = Abs (A)
  Y = If (c) <then_branch = g1 () => (float[2] t) { t = Identity (X) },
      else_branch = g2 () => (float[2] e) { e = Identity (X) }>
}
)");
  auto* declared = proto.mutable_graph()->mutable_node(2)->mutable_attribute(0)->mutable_g()->add_value_info();
  declared->set_name("A");
  declared->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto model = loadModel(proto);
  auto& g = model->graph();
  ir::Rewriter rw(*model);
  ir::Node* neg = g.nodes().front().get();
  ir::Graph* branch = g.nodes().back()->subgraphs().at(0);
  REQUIRE(branch->valueInfo().size() == 1);
  rw.replaceAllUsesWith(neg->output(0), g.findLocal("X"));
  rw.eraseNode(neg);  // A goes with it
  CHECK(g.findLocal("A") == nullptr);
  CHECK(branch->valueInfo().empty());
  CHECK(verify(*model).empty());
  onnx::ModelProto out;
  REQUIRE(out.ParseFromString(serialize(*model)));
  CHECK(out.graph().node(1).attribute(0).g().value_info_size() == 0);
}
