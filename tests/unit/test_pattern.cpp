// The pattern matcher legalize's GELU rules use (lib/pattern/pattern.h).
#include <catch2/catch.hpp>

#include "io/loader.h"
#include "io/writer.h"
#include "passes/replace/replace.h"
#include "pattern/pattern.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/graphcore_ops.h"

using namespace graphrw;

namespace {

const char* kMatch = R"(
<domain: "p", opset_import: ["" : 13]>
ScaleShift (x, b) => (y) {
  two = Constant <value = float {2.0}> ()
  m = Mul (x, two)
  y = Add (m, b)
}
)";
const char* kReplace = R"(
<domain: "p", opset_import: ["" : 13]>
ScaleShift (x, b) => (y) {
  s = Add (x, x)
  y = Add (s, b)
}
)";

Pattern pattern(const char* match = kMatch, const char* replace = kReplace) {
  return Pattern(passes::parseTemplate(match, "m"), passes::parseTemplate(replace, "r"), "test");
}

size_t rewrite(const Pattern& p, ir::Model& m) {
  ir::Rewriter rw(m);
  return p.rewrite(m, rw, m.graph());
}

size_t count(const ir::Model& m, const std::string& op) {
  size_t c = 0;
  for (const auto& n : m.graph().nodes()) c += n->opType() == op;
  return c;
}

}  // namespace

TEST_CASE("pattern: constants by value, Add/Mul in either order, no overlap", "[pattern]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3] x, float[3] b) => (float[3] y, float[3] z, float[3] w) <float c2 = {2.0}, float c3 = {3.0}> {
  m1 = Mul (c2, x)
  y = Add (b, m1)
  m2 = Mul (x, c3)
  z = Add (m2, b)
  k = Constant <value = float[1] {2.0}> ()
  m3 = Mul (y, k)
  w = Add (m3, z)
}
)");
  auto m = loadModel(proto);
  // y (Mul swapped, Add swapped) and w (a [1] Constant for the scalar) match; z multiplies by 3.
  CHECK(rewrite(pattern(), *m) == 2);
  CHECK(count(*m, "Mul") == 1);
  test::TempDir dir;
  writeModel(*m, (dir / "out.onnx").string());
  test::RunResult r = test::run(test::graphrwBin() + " validate " + (dir / "out.onnx").string());
  CHECK(r.status == 0);
  auto out = test::readProto(dir / "out.onnx");
  // c2 is gone with the match that read it; c3 stays.
  std::set<std::string> inits;
  for (const auto& t : out.graph().initializer()) inits.insert(t.name());
  CHECK(inits == std::set<std::string>{"c3"});
}

TEST_CASE("pattern: a value between matched nodes read elsewhere blocks the match", "[pattern]") {
  auto m = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3] x, float[3] b) => (float[3] y, float[3] m) <float c2 = {2.0}> {
  m = Mul (x, c2)
  y = Add (m, b)
}
)"));
  CHECK(rewrite(pattern(), *m) == 0);
  CHECK(count(*m, "Mul") == 1);
}

TEST_CASE("pattern: a formal bound twice must be the same value", "[pattern]") {
  const char* square = R"(
<domain: "p", opset_import: ["" : 13]>
Square (x) => (y) { y = Mul (x, x) }
)";
  const char* pow2 = R"(
<domain: "p", opset_import: ["" : 13]>
Square (x) => (y) {
  two = Constant <value = float {2.0}> ()
  y = Pow (x, two)
}
)";
  auto m = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3] x, float[3] z) => (float[3] y, float[3] w) {
  y = Mul (x, x)
  w = Mul (x, z)
}
)"));
  CHECK(rewrite(pattern(square, pow2), *m) == 1);
  CHECK(count(*m, "Pow") == 1);
  CHECK(count(*m, "Mul") == 1);
}

TEST_CASE("pattern: arity mismatches between match and replacement are usage errors", "[pattern]") {
  const char* one = R"(
<domain: "p", opset_import: ["" : 13]>
One (x) => (y) { y = Relu (x) }
)";
  CHECK_THROWS_WITH(pattern(kMatch, one),
                    Catch::Contains("the match has 2 inputs and 1 outputs, the replacement 1 and 1"));
}

// apply consumes its matches in order: the deque ends empty (each block of
// matches freed as the rewrite passes it), and find's count is what was applied.
TEST_CASE("pattern: apply consumes the matches find returned, in order", "[pattern]") {
  std::string body;
  for (int i = 0; i < 40; ++i)
    body += "  m" + std::to_string(i) + " = Mul (x" + (i ? std::to_string(i - 1) : std::string()) + ", c2)\n  x" +
            std::to_string(i) + " = Add (m" + std::to_string(i) + ", b)\n";
  auto m =
      loadModel(test::parseModel("<ir_version: 8, opset_import: [\"\" : 13]>\n"
                                 "g (float[3] x, float[3] b) => (float[3] x39) <float c2 = {2.0}> {\n" +
                                 body + "}\n"));
  const Pattern p = pattern();
  FlatPointerSet<ir::Node> taken;
  PatternMatches matches = p.find(m->graph(), taken);
  REQUIRE(matches.size() == 40);
  // In graph order: the i-th match's anchor (its Add) produces x<i>.
  for (size_t i = 0; i < matches.size(); ++i) CHECK(p.anchor(matches[i])->output(0)->name() == "x" + std::to_string(i));
  ir::Rewriter rw(*m);
  auto created = p.apply(*m, rw, m->graph(), matches);
  CHECK(matches.empty());
  CHECK(created.size() == 80);  // two Adds a match
  CHECK(count(*m, "Mul") == 0);
  CHECK(count(*m, "Add") == 80);
}
