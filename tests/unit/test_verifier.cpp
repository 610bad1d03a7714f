#include <catch2/catch.hpp>

#include "ir_corruptor.h"
#include "loader.h"
#include "models.h"
#include "pass_manager.h"
#include "error.h"
#include "support.h"
#include "verifier.h"

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

TEST_CASE("verify-each (--verify-each) stops at the pass that broke the IR, naming it (exit 1)", "[verifier][pass-manager]") {
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
