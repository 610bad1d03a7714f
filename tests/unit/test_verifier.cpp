#include <catch2/catch.hpp>

#include "driver/pass_manager.h"
#include "io/loader.h"
#include "ir/fingerprint.h"
#include "ir/rewriter.h"
#include "ir/verifier.h"
#include "ir_corruptor.h"
#include "models.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::ir;
using Corrupt = graphrw::ir::testing::Corruptor;

namespace {

bool mentions(const std::vector<Finding>& findings, const std::string& text) {
  for (const auto& f : findings)
    if (f.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a loaded valid model verifies", "[verifier]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  CHECK(verify(*model).empty());
}

TEST_CASE("the verifier reports what passes must not break", "[verifier]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  Graph& g = model->graph();
  Node* matmul = g.nodes().front().get();
  Node* call = g.nodes().back().get();

  SECTION("a use missing from the use-list") {
    Corrupt::inputs(*call)[0] = g.findLocal("X");  // bypasses the rewriter
    CHECK(mentions(verify(*model), "missing from its use-list"));
  }
  SECTION("a use before its producer") {
    auto& nodes = Corrupt::nodes(g);
    nodes.splice(nodes.begin(), nodes, g.position(call));
    CHECK(mentions(verify(*model), "before it is produced"));
  }
  SECTION("a producer that does not output the value") {
    Corrupt::setProducer(*g.findLocal("H"), call, 0);
    CHECK(mentions(verify(*model), "names a producer"));
  }
  SECTION("a stale use entry") {
    Corrupt::addUse(g.findLocal("X"), call, 0);
    CHECK(mentions(verify(*model), "reads something else"));
  }
  SECTION("a value read from another function's scope") {
    Value* inner = model->functions()[0]->body().findLocal("x");
    Corrupt::inputs(*matmul)[0] = inner;
    Corrupt::addUse(inner, matmul, 0);
    CHECK(mentions(verify(*model), "scope it cannot see"));
  }
  SECTION("a name from another model's arena") {
    auto other = loadModel(test::parseModel(test::kSmallModel));
    CHECK(verify(*model).empty());
    Value* h = g.findLocal("H");
    const Name own = h->name();
    Corrupt::setName(*h, other->graph().findLocal("H")->name());  // equal text, the other model's arena
    CHECK(mentions(verify(*model), "value 2 holds a name from outside its model"));
    Corrupt::setName(*h, own);
    CHECK(verify(*model).empty());
    Corrupt::setName(*matmul, Corrupt::makeName(other->graph(), "m"));
    CHECK(mentions(verify(*model), "node 0 holds a name from outside its model"));
  }
}

TEST_CASE("findCycle names the nodes of a cycle", "[verifier]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  A = Relu(X)
  B = Neg(A)
  Y = Abs(B)
}
)"));
  Graph& g = model->graph();
  CHECK_FALSE(findCycle(g).has_value());
  // A = Relu(B): A -> B -> A.
  Node* relu = g.nodes().front().get();
  Corrupt::removeUse(g.findLocal("X"), relu, 0);
  Corrupt::inputs(*relu)[0] = g.findLocal("B");
  Corrupt::addUse(g.findLocal("B"), relu, 0);
  auto cycle = findCycle(g);
  REQUIRE(cycle);
  CHECK_THAT(*cycle, Catch::Contains("Relu") && Catch::Contains("Neg"));
  CHECK_THAT(*cycle, !Catch::Contains("Abs"));
}

namespace {

// A pass with a bug: it moves the last node to the front (a use before its producer).
class MisorderingPass final : public Pass {
 public:
  std::string name() const override { return "misorder"; }
  void run(Model& model, PassContext&) const override {
    auto& nodes = Corrupt::nodes(model.graph());
    nodes.splice(nodes.begin(), nodes, std::prev(nodes.end()));
  }
};

}  // namespace

TEST_CASE("verify-each (--verify-each) stops at the pass that broke the IR, naming it (exit 1)",
          "[verifier][pass-manager]") {
  test::ScopedEnv off("GRAPHRW_VERIFY_EACH", nullptr);  // the suite turns it on for every pipeline
  auto run = [](bool verifyEach) {
    auto model = loadModel(test::parseModel(test::kSmallModel));
    PassManager pm({verifyEach, std::nullopt, ""});
    pm.add(std::make_unique<MisorderingPass>());
    pm.run(*model);
  };
  try {
    run(true);
    FAIL("the broken IR went through");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Findings);
    CHECK(static_cast<int>(e.code()) == 1);
    CHECK_THAT(std::string(e.what()), Catch::Contains("IR verifier failed after pass 0 (misorder)") &&
                                          Catch::Contains("before it is produced"));
  }
  CHECK_NOTHROW(run(false));  // without the flag the pass manager does not look
}

namespace {

// A pass that lies: it zeroes every weight behind the Rewriter's back, so its
// report would say "changed": false. The verifier's invariants all hold.
class ZeroingPass final : public Pass {
 public:
  std::string name() const override { return "zero-weights"; }
  void run(Model& model, PassContext&) const override {
    for (const auto& init : model.graph().initializers()) {
      Tensor* t = Corrupt::initializer(*init.value);
      std::string zeros(t->storedBytes(), '\0');
      Corrupt::clearRawView(*t);
      Corrupt::proto(*t).clear_float_data();
      Corrupt::proto(*t).set_raw_data(zeros);
    }
  }
};

// A pass that counts edits on a model it leaves as it was (renamed and back).
class BackAndForthPass final : public Pass {
 public:
  std::string name() const override { return "rename-twice"; }
  void run(Model& model, PassContext& context) const override {
    Value* h = model.graph().findLocal("H");
    context.rewriter.renameValue(h, "elsewhere");
    context.rewriter.renameValue(h, "H");
  }
};

std::string runFailing(std::unique_ptr<Pass> pass) {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  PassManager pm({/*verifyEach=*/true, std::nullopt, ""});
  pm.add(std::move(pass));
  try {
    pm.run(*model);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Findings);
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("verify-each fails a pass that changes the model without counting the edit", "[verifier][pass-manager]") {
  std::string message = runFailing(std::make_unique<ZeroingPass>());
  CHECK_THAT(message, Catch::Contains("pass 0 (zero-weights) changed the model without an edit counted"));
  // Not the IR verifier's doing: the zeroed model keeps every invariant.
  auto model = loadModel(test::parseModel(test::kSmallModel));
  PassManager pm({/*verifyEach=*/false, std::nullopt, ""});
  pm.add(std::make_unique<ZeroingPass>());
  test::ScopedEnv off("GRAPHRW_VERIFY_EACH", nullptr);
  auto report = pm.run(*model);
  CHECK(report[0]["changed"] == false);
  CHECK(verify(*model).empty());
  CHECK(model->graph().initializers()[0].tensor->proto().raw_data() == std::string(64, '\0'));
}

TEST_CASE("verify-each fails a pass that counts edits on an unchanged model", "[verifier][pass-manager]") {
  std::string message = runFailing(std::make_unique<BackAndForthPass>());
  CHECK_THAT(message, Catch::Contains("pass 0 (rename-twice) counted edits but the model is unchanged"));
}

namespace {

// A pass that adds a node (an unread Identity of H) through the Rewriter and
// says it matched nothing (legalize did so: "matched": 0 after 455 nodes added).
class SilentAdderPass final : public Pass {
 public:
  explicit SilentAdderPass(size_t matched) : matched_(matched) {}
  std::string name() const override { return "silent-adder"; }
  void run(Model& model, PassContext& context) const override {
    context.rewriter.createNode(model.graph(), nullptr,
                                {"copy", "Identity", "", {model.graph().findLocal("H")}, {"H2"}});
    context.matched = matched_;
  }

 private:
  size_t matched_;
};

}  // namespace

namespace {

// A pass with one counted edit (a new Identity, through the Rewriter) and one
// uncounted one (the call node's attribute dropped behind its back): the
// whole model changed and edits were counted, so only a node-by-node check
// sees the second.
class HalfCountedPass final : public Pass {
 public:
  std::string name() const override { return "half-counted"; }
  void run(Model& model, PassContext& context) const override {
    Graph& g = model.graph();
    context.rewriter.createNode(g, nullptr, {"copy", "Identity", "", {g.findLocal("H")}, {"H2"}});
    context.matched = 1;
    for (const auto& n : g.nodes())
      if (n->opType() == "Layer") Corrupt::attributes(*n).clear();
  }
};

// A counted edit (a new Identity) and, behind the Rewriter's back, one of
// another kind: W's shape changed. No node changed, so only the check of the
// model's parts kind by kind sees it.
class OtherKindPass final : public Pass {
 public:
  std::string name() const override { return "other-kind"; }
  void run(Model& model, PassContext& context) const override {
    Graph& g = model.graph();
    context.rewriter.createNode(g, nullptr, {"copy", "Identity", "", {g.findLocal("H")}, {"H2"}});
    context.matched = 1;
    Corrupt::proto(*Corrupt::initializer(*g.findLocal("W"))).set_dims(0, 2);
  }
};

}  // namespace

TEST_CASE("verify-each fails an edit of another kind than the ones counted", "[verifier][pass-manager]") {
  // One node added and counted; an initializer's shape changed with no initializer edit counted.
  std::string message = runFailing(std::make_unique<OtherKindPass>());
  CHECK_THAT(message, Catch::Contains("pass 0 (other-kind) changed the initializers without the Rewriter counting "
                                      "an edit of that kind"));
}

TEST_CASE("verify-each fails a counted edit that hides an uncounted one, naming the node", "[verifier][pass-manager]") {
  std::string message = runFailing(std::make_unique<HalfCountedPass>());
  CHECK_THAT(message, Catch::Contains("pass 0 (half-counted) edited the node producing 'Y' (local::Layer) without "
                                      "the Rewriter counting it"));
  // Not the IR verifier's doing, nor the whole-model check's: the model keeps every invariant, and
  // edits were counted.
  auto model = loadModel(test::parseModel(test::kSmallModel));
  PassManager pm({/*verifyEach=*/false, std::nullopt, ""});
  pm.add(std::make_unique<HalfCountedPass>());
  test::ScopedEnv off("GRAPHRW_VERIFY_EACH", nullptr);
  auto report = pm.run(*model);
  CHECK(report[0]["changed"] == true);
  CHECK(report[0]["nodes_changed"] == 0);
  CHECK(verify(*model).empty());
}

TEST_CASE("verify-each fails a pass that adds or removes nodes but reports matching none", "[verifier][pass-manager]") {
  std::string message = runFailing(std::make_unique<SilentAdderPass>(0));
  CHECK_THAT(message, Catch::Contains("pass 0 (silent-adder) added 1 and removed 0 nodes but says it matched none"));
  // The same edit reported as one match passes.
  auto model = loadModel(test::parseModel(test::kSmallModel));
  PassManager pm({/*verifyEach=*/true, std::nullopt, ""});
  pm.add(std::make_unique<SilentAdderPass>(1));
  auto report = pm.run(*model);
  CHECK(report[0]["matched"] == 1);
  CHECK(report[0]["nodes_added"] == 1);
}

TEST_CASE("the fingerprint sees payload bytes, doc strings and declared types, not type annotations", "[verifier]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  uint64_t base = fingerprint(*model);
  CHECK(fingerprint(*model) == base);
  Rewriter rw(*model);
  Value* h = model->graph().findLocal("H");
  onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  rw.setType(h, t);  // an annotation, not written
  CHECK(fingerprint(*model) == base);
  CHECK_FALSE(rw.counts().any());
  rw.setDocString(model->graph().nodes().front().get(), "the projection");
  uint64_t documented = fingerprint(*model);
  CHECK(documented != base);
  CHECK(rw.counts().docStringsChanged == 1);
  rw.setDocString(model->graph().nodes().front().get(), "the projection");  // the same text: no edit
  CHECK(rw.counts().docStringsChanged == 1);
  rw.declareType(model->graph(), h, t);
  CHECK(fingerprint(*model) != documented);
  // One byte of a weight.
  auto model2 = loadModel(test::parseModel(test::kSmallModel));
  Tensor* w = Corrupt::initializer(*model2->graph().findLocal("W"));
  Corrupt::proto(*w).set_float_data(15, 2.0f);
  CHECK(fingerprint(*model2) != base);
}

TEST_CASE("replacing a graph output's value is counted as a graph-output edit", "[verifier][rewriter]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  Rewriter rw(*model);
  Graph& g = model->graph();
  Value* y = g.outputs()[0].value;
  Value* h = g.findLocal("H");
  rw.replaceAllUsesWith(y, h, /*graphOutputs=*/true);
  CHECK(g.outputs()[0].value == h);
  CHECK(rw.counts().graphOutputsChanged == 1);
  rw.replaceAllUsesWith(h, h, true);  // nothing changes, nothing counted
  CHECK(rw.counts().graphOutputsChanged == 1);
}

TEST_CASE("the pass manager lets the name tables go when its passes are done", "[pass-manager][names]") {
  auto model = loadModel(test::parseModel(test::kSmallModel));
  PassManager pm({/*verifyEach=*/false, std::nullopt, ""});
  pm.add(std::make_unique<BackAndForthPass>());  // renames: builds the value-name table
  test::ScopedEnv off("GRAPHRW_VERIFY_EACH", nullptr);
  pm.run(*model);
  CHECK_FALSE(model->valueNames().built());
  CHECK(model->valueNames().contains("H"));  // rebuilt on the query
  CHECK_FALSE(model->valueNames().contains("elsewhere"));
}
