// pattern: the search itself on inputs made to blow it up: a
// commutative chain that fails deep down, long chain patterns on long models,
// and the step budget that ends what the memos cannot tame.
#include <catch2/catch.hpp>

#include "helpers.h"
#include "passes/pattern/pattern.h"
#include "passes/replace/replace.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::test;

namespace {

passes::PatternOptions rule(const std::string& match, const std::string& replace, uint64_t maxSteps = 0) {
  passes::PatternOptions o;
  passes::PatternRule r;
  r.where = "test";
  r.match = passes::parseTemplate(match, "test/match", passes::TemplateRole::Match);
  r.replace = passes::parseTemplate(replace, "test/replace");
  o.rules.push_back(std::move(r));
  o.allowNoMatch = true;
  if (maxSteps) o.maxMatchSteps = maxSteps;
  return o;
}

std::string fn(const std::string& name, const std::string& sig, const std::string& body) {
  return "<domain: \"p\", opset_import: [\"\" : 14]>\n" + name + " " + sig + " {\n" + body + "}\n";
}

size_t ops(const ir::Model& m, const std::string& op) {
  size_t n = 0;
  for (const auto& node : m.graph().nodes()) n += node->opType() == op;
  return n;
}

size_t matched(const nlohmann::json& report) { return report["rules"][0]["matched"].get<size_t>(); }

// a_0 = Mul (x, z); a_i = Add (a_{i-1}, a_{i-1}): both inputs of every Add are
// the same node, so a commutative match tries both orders at every level.
// `fits`: a_0 = Mul (x, x) and a_i = Add (a_{i-1}, x), which the match below fits.
onnx::ModelProto doublingModel(int depth, bool fits = false) {
  std::string body = fits ? "  a0 = Mul (x, x)\n" : "  a0 = Mul (x, z)\n";
  for (int i = 1; i <= depth; ++i)
    body += "  a" + std::to_string(i) + " = Add (a" + std::to_string(i - 1) +
            (fits ? ", x" : ", a" + std::to_string(i - 1)) + ")\n";
  return parseModel("<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[2] x, float[2] z) => (float[2] a" +
                    std::to_string(depth) + ") {\n" + body + "}\n");
}

// p_i = Add (p_{i-1}, c_i), p_0 = Mul (a, a): the leaf wants one value twice.
std::string doublingMatch(int depth) {
  std::string sig = "(a", body = "  p0 = Mul (a, a)\n";
  for (int i = 1; i <= depth; ++i) {
    sig += ", c" + std::to_string(i);
    body += "  p" + std::to_string(i) + " = Add (p" + std::to_string(i - 1) + ", c" + std::to_string(i) + ")\n";
  }
  return fn("Deep", sig + ") => (p" + std::to_string(depth) + ")", body);
}

std::string doublingReplace(int depth) {
  std::string sig = "(a";
  for (int i = 1; i <= depth; ++i) sig += ", c" + std::to_string(i);
  return fn("Flat", sig + ") => (y)", "  y = Identity (a)\n");
}

}  // namespace

TEST_CASE("pattern search: a commutative chain failing at its leaf is not retried in both orders per level",
          "[pattern][hostile]") {
  // Without remembering failures this is 2^40 attempts; the budget (100000
  // per attempt, the default) would stop it with exit 5.
  nlohmann::json report;
  auto m = runPass(doublingModel(40), passes::createPatternPass(rule(doublingMatch(40), doublingReplace(40))), &report);
  CHECK(matched(report) == 0);
  CHECK(ops(*m, "Add") == 40);

  // The chain read so that the match fits: one match, the whole chain replaced.
  auto ok = runPass(doublingModel(40, true), passes::createPatternPass(rule(doublingMatch(40), doublingReplace(40))),
                    &report);
  CHECK(matched(report) == 1);
  CHECK(ops(*ok, "Add") == 0);

  // A match whose input would be a value made inside it (c_1 binding a_0,
  // which the replacement erases) is no match.
  auto inside = parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] a2) {
  a0 = Mul (x, x)
  a1 = Add (a0, a0)
  a2 = Add (a1, a1)
}
)");
  runPass(inside, passes::createPatternPass(rule(doublingMatch(2), doublingReplace(2))), &report);
  CHECK(matched(report) == 0);
}

TEST_CASE("pattern search: a 500-node chain pattern on a 5000-node chain matches in one pass over the model",
          "[pattern][hostile]") {
  std::string body = "  r0 = Relu (x)\n";
  for (int i = 1; i < 5000; ++i) body += "  r" + std::to_string(i) + " = Relu (r" + std::to_string(i - 1) + ")\n";
  auto model =
      parseModel("<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[2] x) => (float[2] r4999) {\n" + body + "}\n");
  std::string match = "  q0 = Relu (x)\n";
  for (int i = 1; i < 500; ++i) match += "  q" + std::to_string(i) + " = Relu (q" + std::to_string(i - 1) + ")\n";
  nlohmann::json report;
  auto m = runPass(
      model,
      passes::createPatternPass(rule(fn("Chain", "(x) => (q499)", match), fn("One", "(x) => (y)", "  y = Relu (x)\n"))),
      &report);
  CHECK(matched(report) == 10);  // non-overlapping, in graph order
  CHECK(ops(*m, "Relu") == 10);
}

TEST_CASE("pattern search: the step budget ends an attempt with exit 5 naming the rule, the node and the option",
          "[pattern][hostile]") {
  auto model = doublingModel(12);
  try {
    runPass(model, passes::createPatternPass(rule(doublingMatch(12), doublingReplace(12), 5)));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("test: rule 'Deep': matching at the node producing 'a") &&
                             Catch::Contains("(ai.onnx::Add) took") && Catch::Contains("took more than 5 steps") &&
                             Catch::Contains("--max-match-steps"));
  }
  // A budget the search fits in gives the answer.
  nlohmann::json report;
  runPass(model, passes::createPatternPass(rule(doublingMatch(12), doublingReplace(12), 1000)), &report);
  CHECK(matched(report) == 0);
}

TEST_CASE("pattern: a replacement at another opset is converted by graphrw's adapters, not ONNX's crashing one",
          "[pattern][hostile]") {
  // ONNX's converter dereferences Split-13's missing `split` input going to 11 (SIGSEGV).
  auto model = parseModel(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[4, 2] x) => (float[4, 2] y) {
  y = Relu (x)
}
)");
  auto o = rule("<domain: \"p\", opset_import: [\"\" : 11]>\nM (x) => (y) {\n  y = Relu (x)\n}\n",
                fn("Swap", "(x) => (y)", "  a, b = Split <axis = 0> (x)\n  y = Concat <axis = 0> (b, a)\n"));
  nlohmann::json report;
  auto m = runPass(model, passes::createPatternPass(o), &report);
  CHECK(matched(report) == 1);
  REQUIRE(ops(*m, "Split") == 1);
  CHECK(m->graph().nodes().front()->inputs().size() == 1);
  CHECK(m->opsetVersion("") == 11);
  checkValid(*m);
}
