#include <catch2/catch.hpp>

#include "driver/pass_manager.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/expand/expand.h"
#include "passes/fold/fold.h"
#include "passes/opset/opset.h"
#include "passes/set_shapes/set_shapes.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;

namespace {

// A GPT-style block at opset 17 as PyTorch 2.x writes it: dynamic batch and
// sequence, positions from Range over Shape-15, a causal mask from Trilu,
// Unsqueeze with an axes input, Softmax over a non-last axis on purpose,
// LayerNormalization, CastLike, Dropout with ratio / training_mode inputs.
const char* kGpt = R"(
<ir_version: 8, opset_import: ["" : 17]>
gpt (int64[batch, seq] ids) => (float[batch, seq, 4] y, float[batch, seq, seq] probs) <
    float[10, 4] emb = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7,
        -0.8,
                        -0.9, -1.0, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95, 1.05, -0.15, -0.25, -0.35,
                            -0.45,
                        -0.55, -0.65, -0.75, -0.85, -0.95, -1.05},
    float[8, 4] pos = {0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16,
                       0.17, 0.18, 0.19, 0.20, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26, 0.27, 0.28, 0.29, 0.30, 0.31, 0.32},
    float[4] g = {1.0, 1.1, 0.9, 1.0}, float[4] b = {0.0, 0.1, -0.1, 0.0}, int64[1] ax0 = {0},
    float ratio = {0.1}, bool training = {0}> {
  e = Gather(emb, ids)
  s1 = Shape <start = 1> (ids)
  zero = Constant <value = int64 {0}> ()
  one = Constant <value = int64 {1}> ()
  seqlen = Squeeze(s1, ax0)
  r = Range(zero, seqlen, one)
  p = Gather(pos, r)
  h = Add(e, p)
  ss = Concat <axis = 0> (s1, s1)
  ones = ConstantOfShape <value = float[1] {1.0}> (ss)
  tri = Trilu <upper = 0> (ones)
  mask = Cast <to = 9> (tri)
  ht = Transpose <perm = [0, 2, 1]> (h)
  att = MatMul(h, ht)
  big = Constant <value = float {-1000000000.0}> ()
  masked = Where(mask, att, big)
  probs = Softmax <axis = 1> (masked)
  ctx = MatMul(probs, h)
  d, dm = Dropout(ctx, ratio, training)
  ln = LayerNormalization <axis = -1, epsilon = 0.00001> (d, g, b)
  half = Constant <value = double {0.5}> ()
  halff = CastLike(half, ln)
  y = Mul(ln, halff)
}
)";

onnx::ModelProto run(const onnx::ModelProto& in, std::vector<std::unique_ptr<Pass>> passes,
                     nlohmann::json* report = nullptr) {
  auto model = loadModel(in);
  PassManager pm({true, std::nullopt, ""});
  for (auto& p : passes) pm.add(std::move(p));
  auto r = pm.run(*model);
  if (report) *report = r;
  TempDir dir;
  writeModel(*model, (dir / "out.onnx").string());
  return readProto(dir / "out.onnx");
}

int64_t onnxOpset(const onnx::ModelProto& m) {
  for (const auto& op : m.opset_import())
    if (op.domain().empty()) return op.version();
  return 0;
}

std::unique_ptr<Pass> toOpset(int64_t v) { return passes::createOpsetPass({v, std::nullopt}); }

}  // namespace

TEST_CASE("opset: a GPT-style opset-17 export goes to 11 after set-shapes and fold, same maths", "[opset]") {
  auto original = parseModel(kGpt);
  std::vector<std::unique_ptr<Pass>> pipeline;
  pipeline.push_back(passes::createSetShapesPass({{{"ids", {2, 5}}}, {}}));
  pipeline.push_back(passes::createFoldPass({}));
  pipeline.push_back(toOpset(11));
  pipeline.push_back(passes::createFoldPass({}));  // LayerNormalization's body has a Shape of a now static tensor
  nlohmann::json report;
  auto converted = run(original, std::move(pipeline), &report);
  INFO(report.dump());
  CHECK(onnxOpset(converted) == 11);
  auto ops = opCounts(converted);
  for (const char* gone : {"Trilu", "Range", "LayerNormalization", "CastLike", "Shape"})
    CHECK(ops.count(std::string("ai.onnx::") + gone) == 0);
  auto model = loadModel(converted);
  checkValid(*model);  // ONNX's checker at opset 11, strict shape inference
  checkSameMaths(original, converted, 1e-5, 10);
  // The report says what did what.
  CHECK(report[2]["converted"]["Softmax"]["graphrw"] == 1);
  CHECK(report[2]["expanded"]["LayerNormalization"] == 1);
  CHECK(report[1]["folded"].contains("Range"));
}

TEST_CASE("opset: dynamic shapes go down too where the rewrite does not need them", "[opset]") {
  // Without set-shapes: Trilu's mask needs static dimensions, Softmax's axis 1
  // needs the rank only (known), Range stays (it exists at 11).
  auto original = parseModel(kGpt);
  std::vector<std::unique_ptr<Pass>> pipeline;
  pipeline.push_back(toOpset(11));
  try {
    run(original, std::move(pipeline));
    FAIL("expected a refusal");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Unsupported);
    std::string what = e.what();
    INFO(what);
    CHECK(what.find("1 node has no form at ai.onnx 11") != std::string::npos);
    CHECK(what.find("the node producing 'tri' (ai.onnx::Trilu)") != std::string::npos);  // unnamed: named by output
    CHECK(what.find("Trilu") != std::string::npos);
    CHECK(what.find("not static") != std::string::npos);
  }
}

TEST_CASE("opset: every node without a target form is listed in one error and nothing is written", "[opset]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x, float[3,4] w, int64[1] axes) => (float[2,4] y, float[1,3] z, float[2,3] q) {
  y = Einsum <equation = "ij,jk->ik"> (x, w)
  z = ReduceSum(x, axes)
  q = Celu(x)
}
)");
  auto model = loadModel(m);
  PassManager pm({true, std::nullopt, ""});
  pm.add(toOpset(11));
  // The pass converts what it can before it refuses: the IR it leaves is not
  // for writing, and the command line writes nothing (below).
  try {
    pm.run(*model);
    FAIL("expected a refusal");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Unsupported);
    std::string what = e.what();
    INFO(what);
    CHECK(what.find("2 nodes have no form at ai.onnx 11") != std::string::npos);
    CHECK(what.find("Einsum has no form before opset 12") != std::string::npos);
    CHECK(what.find("axes input 'axes' is not a constant") != std::string::npos);
  }
  // Through the command line: exit 5, the existing output and the model untouched, no file left behind.
  TempDir dir;
  writeProto(m, dir / "m.onnx");
  writeFile(dir / "out.onnx", "previous");
  const std::string input = readFile(dir / "m.onnx");
  auto r = test::run(graphrwBin() + " opset '" + (dir / "m.onnx").string() + "' --to 11 -o '" +
                     (dir / "out.onnx").string() + "'");
  CHECK(r.status == 5);
  CHECK_THAT(r.err, Catch::Contains("2 nodes have no form at ai.onnx 11"));
  CHECK(readFile(dir / "out.onnx") == "previous");
  CHECK(readFile(dir / "m.onnx") == input);
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 2);
}

TEST_CASE("opset: Shape-15, Unsqueeze-13, Split-13, Softmax-13, Reshape-14, Clip-13 down to 11 and back up",
          "[opset]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2,3,4] x) => (float[2,3,4] s, int64[2] shp, float[1,2,3,4] u, float[2,3,2] a, float[2,3,2] b2, float[6,4] r,
    float[2,3,4] c) <int64[1] ax = {0}, int64[2] parts = {2, 2}, int64[2] newshape = {6, -1}> {
  s = Softmax <axis = 0> (x)
  shp = Shape <start = -2> (x)
  u = Unsqueeze(x, ax)
  a, b2 = Split <axis = 2> (x, parts)
  r = Reshape <allowzero = 0> (x, newshape)
  lo = Constant <value_float = -0.5> ()
  hi = Constant <value_float = 0.5> ()
  c = Clip(x, lo, hi)
}
)");
  std::vector<std::unique_ptr<Pass>> down;
  down.push_back(toOpset(11));
  auto at11 = run(m, std::move(down));
  CHECK(onnxOpset(at11) == 11);
  checkValid(*loadModel(at11));
  checkSameMaths(m, at11);
  std::vector<std::unique_ptr<Pass>> up;
  up.push_back(toOpset(17));
  auto at17 = run(at11, std::move(up));
  CHECK(onnxOpset(at17) == 17);
  checkValid(*loadModel(at17));
  checkSameMaths(m, at17);
}

TEST_CASE("opset: functions importing ai.onnx are converted with the model, others keep their import", "[opset]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[2,3] x) => (float[1,2,3] y) {
  y = local.F(x)
}
<domain: "local", opset_import: ["" : 13]>
F (a) => (b) {
  ax = Constant <value = int64[1] {0}> ()
  b = Unsqueeze(a, ax)
}
)");
  std::vector<std::unique_ptr<Pass>> down;
  down.push_back(toOpset(11));
  auto out = run(m, std::move(down));
  CHECK(onnxOpset(out) == 11);
  REQUIRE(out.functions_size() == 1);
  CHECK(out.functions(0).opset_import(0).version() == 11);
  bool attr = false;
  for (const auto& n : out.functions(0).node())
    if (n.op_type() == "Unsqueeze") attr = n.input_size() == 1 && n.attribute_size() == 1;
  CHECK(attr);
  checkSameMaths(m, out);
}

TEST_CASE("opset: ops inside a local function convert with its call sites' types, or the refusal names the function",
          "[opset]") {
  // Trilu has no form before 14; graphrw writes it as a constant mask, which
  // needs the last two dimensions: only the call sites give them.
  auto model = [](const std::string& zType) {
    return parseModel(R"(
<ir_version: 8, opset_import: ["" : 14, "local" : 1]>
g (float[4,4] x, )" + zType +
                      R"( z) => (float[4,4] y, )" + zType + R"( w) {
  y = local.Tri(x)
  w = local.Tri(z)
}
<domain: "local", opset_import: ["" : 14]>
Tri (a) => (b) {
  t = Trilu(a)
  b = Relu(t)
}
)");
  };
  SECTION("call sites agree: converted inside the function, same maths") {
    auto m = model("float[4,4]");
    std::vector<std::unique_ptr<Pass>> down;
    down.push_back(toOpset(13));
    auto out = run(m, std::move(down));
    REQUIRE(out.functions_size() == 1);
    CHECK(out.functions(0).opset_import(0).version() == 13);
    for (const auto& n : out.functions(0).node()) CHECK(n.op_type() != "Trilu");
    checkSameMaths(m, out);
  }
  SECTION("call sites disagree: refused naming the function, the input, its types and expand") {
    auto m = model("float[3,5]");
    auto loaded = loadModel(m);
    PassManager pm({true, std::nullopt, ""});
    pm.add(toOpset(13));
    try {
      pm.run(*loaded);
      FAIL("expected a refusal");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::Unsupported);
      std::string what = e.what();
      INFO(what);
      CHECK(
          what.find("in local function 'local::Tri', 2 call sites, whose input 'a' has types float[3,5] float[4,4]") !=
          std::string::npos);
      CHECK(what.find("`graphrw expand` inlines the calls first") != std::string::npos);
      CHECK(what.find("run set-shapes") == std::string::npos);  // it cannot help inside a function
    }
    // As the message says: expand, then convert; each call has its own mask.
    std::vector<std::unique_ptr<Pass>> passes;
    passes.push_back(passes::createExpandPass({}));
    passes.push_back(toOpset(13));
    auto out = run(m, std::move(passes));
    CHECK(onnxOpset(out) == 13);
    checkSameMaths(m, out);
  }
}

TEST_CASE("opset --ir-version refuses what the IR version lacks", "[opset]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) {
  y = Relu(x)
}
)");
  auto model = loadModel(m);
  PassManager pm({true, std::nullopt, ""});
  pm.add(passes::createOpsetPass({std::nullopt, 6}));
  CHECK_THROWS_WITH(pm.run(*model), Catch::Contains("ai.onnx 13 needs IR version 7"));

  std::vector<std::unique_ptr<Pass>> both;
  both.push_back(passes::createOpsetPass({11, 6}));
  auto out = run(m, std::move(both));
  CHECK(out.ir_version() == 6);
  CHECK(onnxOpset(out) == 11);
  checkValid(*loadModel(out));
}

TEST_CASE("opset: If branches are converted with the main graph", "[opset]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[2,3] x) => (float[1,2,3] y) {
  y = If(c) <then_branch = t () => (float[1,2,3] a) {
                ax = Constant <value = int64[1] {0}> ()
                a = Unsqueeze(x, ax)
              },
              else_branch = e () => (float[1,2,3] b) {
                n = Neg(x)
                ax2 = Constant <value = int64[1] {0}> ()
                b = Unsqueeze(n, ax2)
              }>
}
)");
  std::vector<std::unique_ptr<Pass>> down;
  down.push_back(toOpset(11));
  nlohmann::json report;
  auto out = run(m, std::move(down), &report);
  INFO(report.dump());
  CHECK(onnxOpset(out) == 11);
  CHECK(report[0]["converted"]["Unsqueeze"]["graphrw"] == 2);
  for (const auto& a : out.graph().node(0).attribute())
    for (const auto& n : a.g().node()) {
      CHECK(n.op_type() != "Constant");  // the axes Constants went with the input
      if (n.op_type() == "Unsqueeze") CHECK(n.input_size() == 1);
    }
  checkValid(*loadModel(out));
  checkSameMaths(m, out);
}

TEST_CASE("opset down: an op the target lacks but whose schema has a function body is written as the body", "[opset]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y) <float[4] s = {1.0, 2.0, 0.5, -1.0}, float[4] b = {0.0, 0.1, -0.2, 3.0}> {
  y = LayerNormalization <axis = -1, epsilon = 0.001> (x, s, b)
}
)");
  passes::OpsetOptions o;
  o.to = 11;
  nlohmann::json report;
  auto out = toProto(*runPass(m, passes::createOpsetPass(o), &report));
  INFO(report.dump());
  CHECK(report["expanded"]["LayerNormalization"] == 1);
  CHECK(countOp(out, "LayerNormalization") == 0);
  CHECK(out.opset_import(0).version() == 11);
  checkSameMaths(m, out, 1e-5);
}
