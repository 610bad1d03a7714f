// legalize --target popart, and the PopART rules the other passes follow
// (placement follows the data, checkpoints outside callees, outline shares
// exactly when PopART may). The proof: PyTorch exports through
// examples/popart.rules.json have no `validate --target popart` finding and,
// with the ai.graphcore ops mapped back to standard ONNX (Calls inlined,
// GroupNormalization by its definition), ONNX Runtime's outputs equal the
// original's.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <map>

#include "analysis/types.h"
#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/expand/expand.h"
#include "passes/popart/checkpoint/checkpoint.h"
#include "passes/popart/legalize/legalize.h"
#include "passes/popart/outline/outline.h"
#include "passes/replace/replace.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/check.h"
#include "target/popart/graphcore_ops.h"
#include "target/popart/popart.h"

namespace fs = std::filesystem;
using namespace graphrw;
using namespace graphrw::test;

namespace {

fs::path pytorchDir() { return fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch"; }

std::string findingsText(const ir::Model& m) {
  std::string s;
  for (const auto& f : popart::checkImport(m)) s += f.check + ": " + f.where + ": " + f.message + "\n";
  return s;
}

// The rule file's passes, after set-shapes where the model is an export with symbolic dimensions
// (as docs/popart.md runs it); the report's entries are the rule file's passes'.
nlohmann::json runRules(ir::Model& model, const std::string& rulesPath) {
  RuleFile rules = loadRules(rulesPath);
  PassManager pm({true, std::nullopt, ""});
  auto shapes = exportShapes(model);
  bool fixed = shapes != nullptr;
  if (fixed) pm.add(std::move(shapes));
  for (auto& p : rules.passes) pm.add(p);
  auto report = pm.run(model);
  if (fixed) report.erase(report.begin());
  return report;
}

// The model as written to a file and loaded again.
std::unique_ptr<ir::Model> reloaded(ir::Model& m) {
  TempDir dir;
  writeModel(m, (dir / "m.onnx").string());
  return loadModel((dir / "m.onnx").string());
}

onnx::ModelProto writeAndRead(ir::Model& m) {
  TempDir dir;
  writeModel(m, (dir / "m.onnx").string());
  return readProto(dir / "m.onnx");
}

}  // namespace

TEST_CASE("legalize: PyTorch exports through examples/popart.rules.json import into PopART and keep the maths",
          "[legalize][popart][pytorch]") {
  std::string rules = (fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "popart.rules.json").string();
  std::vector<std::string> names = {"bert-opset15", "bert-opset17", "bert-functions-opset15", "bert-functions-opset17",
                                    "gpt-opset14",  "gpt-opset17",  "resnet-opset13",         "resnet-opset17"};
  for (const auto& name : names) {
    INFO(name);
    fs::path path = pytorchDir() / (name + ".onnx");
    REQUIRE(fs::exists(path));
    auto original = readProto(path);
    auto model = loadModel(path.string());
    auto report = runRules(*model, rules);
    INFO(report.dump());
    INFO(findingsText(*model));
    CHECK(popart::checkImport(*model).empty());
    checkValid(*model);
    CHECK(model->irVersion() == 6);
    CHECK(model->opsetVersion("") == 11);
    CHECK(model->functions().empty());
    // Every declared type is static, the export's value_info written before
    // the shapes were fixed ("float[1,?,16]" for the positions) included.
    model->graph().walkGraphs([&](const ir::Graph& g) {
      std::vector<const ir::ValueInfo*> declared;
      for (const auto& vi : g.valueInfo()) declared.push_back(&vi);
      for (const auto& out : g.outputs()) declared.push_back(&out);
      for (const ir::ValueInfo* vi : declared) {
        INFO(vi->value->name() << ": " << graphrw::typeString(&vi->typeOrEmpty()));
        bool fixed = vi->typeOrEmpty().tensor_type().has_shape();
        for (const auto& d : vi->typeOrEmpty().tensor_type().shape().dim()) fixed &= d.has_dim_value();
        CHECK(fixed);
      }
    });
    // Every encoder layer is a Call, with checkpoints on the Call outputs.
    if (name.starts_with("bert") || name.starts_with("gpt")) {
      size_t calls = 0, checkpoints = 0;
      for (const auto& n : model->graph().nodes()) {
        calls += n->opType() == "Call";
        checkpoints += popart::isCheckpoint(*n);
      }
      CHECK(calls == 2);
      CHECK(checkpoints >= 2);
      // One callee for both layers: the mask computation PyTorch leaves in the
      // first layer is hoisted, weights reached through Identity are read directly.
      const auto& passes = report.is_array() ? report : report["passes"];
      CHECK(passes[2]["pass"] == "outline");
      CHECK(passes[2]["distinct_bodies"] == 1);
      // Both layers' erf-GELU chains became ai.graphcore::GeluErf.
      size_t gelus = 0;
      for (const auto& [pattern, n] : passes[0]["steps"]["patterns"].items()) gelus += n.get<size_t>();
      CHECK(gelus == 2);
    }
    auto mapped = mapBack(*model);
    checkSameMaths(original, mapped, 1e-4, 40);
  }
}

TEST_CASE("legalize: the bundled example goes all the way", "[legalize][popart]") {
  fs::path example = fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "bert-tiny.onnx";
  auto original = readProto(example);
  auto model = loadModel(example.string());
  auto report = runRules(*model, (fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "popart.rules.json").string());
  INFO(findingsText(*model));
  CHECK(popart::checkImport(*model).empty());
  // One callee for both layers, checkpoints in the main graph on the Calls' outputs.
  const auto& outline = report.is_array() ? report[2] : report["passes"][2];
  CHECK(outline["distinct_bodies"] == 1);
  size_t checkpoints = 0;
  for (const auto& n : model->graph().nodes())
    if (popart::isCheckpoint(*n)) {
      ++checkpoints;
      CHECK(n->input(0)->producer()->opType() == "Call");
    }
  CHECK(checkpoints == 2);
  checkSameMaths(original, mapBack(*model), 1e-4, 2);
}

TEST_CASE("legalize: dynamic inputs and ops PopART lacks are errors naming them", "[legalize][popart]") {
  auto dynamic = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 4] x, int64[batch, n] ids) => (float[batch, 4] y) { y = Relu(x) }
)");
  try {
    runPass(dynamic, passes::createLegalizePass({}));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(e.what(), Catch::Contains("'x' [batch, 4]") && Catch::Contains("'ids' [batch, n]"));
  }
  passes::LegalizeOptions shapes;
  shapes.dims = {{"batch", 2}, {"n", 3}, {"unused", 7}};  // a name the model lacks is an error (as in set-shapes)
  CHECK_THROWS_WITH(runPass(dynamic, passes::createLegalizePass(shapes)),
                    Catch::Contains("no input of the model has a dimension named 'unused'"));
  shapes.dims.erase("unused");
  auto fixed = runPass(dynamic, passes::createLegalizePass(shapes));
  // legalize refuses while checkImport finds anything: what counts is that the written file keeps it so.
  CHECK(popart::checkImport(*reloaded(*fixed)).empty());

  auto nonzero = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (int64[1, 4] y) { y = NonZero(x) }
)");
  try {
    runPass(nonzero, passes::createLegalizePass({}));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("op: the node producing 'y' (ai.onnx::NonZero): PopART has no NonZero op"));
  }
  // On a Constant it folds away (in both modes); on an initializer only in
  // inference mode: training keeps initializers (parameters) and the ops reading them.
  const char* onConstant = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) {
  c = Constant <value = float[3] {0.0, 1.0, 2.0}> ()
  nz = NonZero(c)
  s = Shape(nz)
  f = Cast <to = 1> (s)
  y = Add(x, f)
}
)";
  const char* onInitializer = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) <float[3] c = {0.0, 1.0, 2.0}> {
  nz = NonZero(c)
  s = Shape(nz)
  f = Cast <to = 1> (s)
  y = Add(x, f)
}
)";
  for (auto [text, mode] :
       {std::pair{onConstant, "training"}, {onConstant, "inference"}, {onInitializer, "inference"}}) {
    INFO(mode << text);
    passes::LegalizeOptions o;
    o.mode = mode;
    auto folded = runPass(parseModel(text), passes::createLegalizePass(o));
    INFO(findingsText(*folded));
    // legalize refuses while checkImport finds anything: what counts is that the written file keeps it so.
    CHECK(popart::checkImport(*reloaded(*folded)).empty());
    CHECK(countOp(toProto(*folded), "NonZero") == 0);
  }
  try {
    runPass(parseModel(onInitializer), passes::createLegalizePass({}));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("op: the node producing 'nz' (ai.onnx::NonZero): PopART has no NonZero op"));
  }
}

TEST_CASE("legalize: the CLI writes nothing while findings remain", "[legalize][popart][cli]") {
  TempDir dir;
  writeProto(parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (int64[1, 4] y) { y = NonZero(x) }
)"),
             dir / "m.onnx");
  auto r = run(graphrwBin() + " legalize " + (dir / "m.onnx").string() + " -o " + (dir / "out.onnx").string());
  CHECK(r.status == 5);
  CHECK_THAT(r.err, Catch::Contains("popart would refuse the result (1 finding)"));
  CHECK_FALSE(fs::exists(dir / "out.onnx"));
  auto ok = run(graphrwBin() + " legalize " + (pytorchDir() / "resnet-opset15.onnx").string() +
                " --input pixels=1,3,16,16 -o " + (dir / "r.onnx").string());
  CHECK(ok.status == 0);
  CHECK(run(graphrwBin() + " validate --target popart " + (dir / "r.onnx").string()).status == 0);
}

TEST_CASE("popart placement: inserted ops take the placement of the op they follow or replace", "[popart][placement]") {
  auto m = parseModel(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 4] x) => (float[2, 4] y) {
  a = Relu <__ipu_number = 1, __pipeline_stage = 0> (x)
  y = Sigmoid <__ipu_number = 1, __pipeline_stage = 0> (a)
}
)");
  for (auto& n : *m.mutable_graph()->mutable_node()) n.set_name(n.op_type() == "Relu" ? "/block/relu" : "sig");
  passes::CheckpointOptions ck;
  ck.after = sel("scope=/block");
  auto checkpointed = runPass(m, passes::createCheckpointPass(ck));
  size_t found = 0;
  for (const auto& n : checkpointed->graph().nodes())
    if (popart::isCheckpoint(*n)) {
      ++found;
      REQUIRE(n->attribute("__ipu_number"));
      CHECK(n->attribute("__ipu_number")->proto().i() == 1);
      CHECK(n->attribute("__pipeline_stage")->proto().i() == 0);
    }
  CHECK(found == 1);
  INFO(findingsText(*checkpointed));
  CHECK(popart::checkImport(*checkpointed).empty());

  // A template's ops run where the node they replace ran.
  passes::ReplaceOptions rep;
  passes::Replacement r;
  r.select = sel("op_type=Sigmoid");
  r.templ = passes::parseTemplate(R"(
<domain: "t", opset_import: ["" : 11]>
SigmoidByTanh (x) => (y) {
  half = Constant <value = float {0.5}> ()
  h = Mul (x, half)
  t = Tanh (h)
  u = Mul (t, half)
  y = Add (u, half)
}
)",
                                  "test");
  rep.replacements.push_back(r);
  auto replaced = runPass(m, passes::createReplacePass(rep));
  INFO(findingsText(*replaced));
  CHECK(popart::checkImport(*replaced).empty());
  for (const auto& n : replaced->graph().nodes()) CHECK(n->attribute("__ipu_number"));
}

TEST_CASE("outline for PopART: weights through Identity, shape-like constants, unknown shapes, checkpoints",
          "[outline][popart]") {
  // Layer 1 reads layer 0's weight through an Identity, as PyTorch writes
  // shared-valued parameters; both layers Reshape with a constant shape.
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 6] x) => (float[2, 6] y) <float[6] w0 = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, int64[2] s0 = {3, 4},
    int64[2] s1 = {3, 4}, int64[2] back = {2, 6}> {
  w1 = Identity(w0)
  a0 = Mul(x, w0)
  r0 = Reshape(a0, s0)
  o0 = Reshape(r0, back)
  a1 = Mul(o0, w1)
  r1 = Reshape(a1, s1)
  y = Reshape(r1, back)
}
)");
  const char* names[] = {"w1", "/l.0/mul", "/l.0/r", "/l.0/back", "/l.1/mul", "/l.1/r", "/l.1/back"};
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  passes::OutlineOptions o;
  o.select = sel("scope=/l.*");
  nlohmann::json report;
  auto shared = runPass(m, passes::createOutlinePass(o), &report);
  INFO(report.dump());
  CHECK(report["distinct_bodies"] == 1);
  CHECK(report["weight_identities_removed"] == 1);
  INFO(findingsText(*shared));
  CHECK(findingsText(*shared).find("callee-shape-operand") == std::string::npos);
  checkSameMaths(m, mapBack(*shared));  // Calls inlined for ONNX Runtime

  // A checkpoint pass selecting ops inside the callee leaves them alone (PopART never reads them there).
  passes::CheckpointOptions ck;
  ck.after = sel("op_type=Mul");
  nlohmann::json ckReport;
  auto afterCk = runPass(writeAndRead(*shared), passes::createCheckpointPass(ck), &ckReport);
  INFO(ckReport.dump());
  CHECK(ckReport["blocks_in_callees_skipped"].get<size_t>() >= 1);
  CHECK(ckReport["checkpoints_added"] == 0);
  for (const auto& f : popart::checkImport(*afterCk)) CHECK(f.check != "callee-checkpoint");

  // The same with different reshape values: two callees, never one built with the first call's shape.
  auto differ = m;
  for (auto& t : *differ.mutable_graph()->mutable_initializer())
    if (t.name() == "s1") {
      t.clear_int64_data();
      t.add_int64_data(4);
      t.add_int64_data(3);
    }
  auto split = runPass(differ, passes::createOutlinePass(o), &report);
  CHECK(report["distinct_bodies"] == 2);
  for (const auto& f : popart::checkImport(*split)) CHECK(f.check != "callee-shape-operand");
  checkSameMaths(differ, mapBack(*split));
}

TEST_CASE("outline for PopART: a symbolic input shape shares the callee, which declares the common type",
          "[outline][popart]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, 6] x, float[2, 6] z) => (float[N, 6] y0, float[2, 6] y1) {
  a0 = Relu(x)
  y0 = Sigmoid(a0)
  a1 = Relu(z)
  y1 = Sigmoid(a1)
}
)");
  const char* names[] = {"/l.0/relu", "/l.0/sig", "/l.1/relu", "/l.1/sig"};
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  passes::OutlineOptions o;
  o.select = sel("scope=/l.*");
  nlohmann::json report;
  auto out = runPass(m, passes::createOutlinePass(o), &report);
  INFO(report.dump());
  CHECK(report["distinct_bodies"] == 1);
  const ir::Node* call = nullptr;
  for (const auto& n : out->graph().nodes())
    if (n->opType() == "Call") call = n.get();
  REQUIRE(call);
  CHECK(call->attribute("num_outputs")->proto().i() == 1);
  const auto& in = call->attribute("callee")->g()->inputs().front().value->type()->tensor_type();
  REQUIRE(in.shape().dim_size() == 2);
  CHECK_FALSE(in.shape().dim(0).has_dim_value());  // N at one site, 2 at the other
  CHECK(in.shape().dim(1).dim_value() == 6);
  checkSameMaths(m, mapBack(*out));

  // Two static shapes that differ do not share: PopART would build the body for the first.
  auto twoStatic = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3, 6] x, float[2, 6] z) => (float[3, 6] y0, float[2, 6] y1) {
  a0 = Relu(x)
  y0 = Sigmoid(a0)
  a1 = Relu(z)
  y1 = Sigmoid(a1)
}
)");
  for (int i = 0; i < twoStatic.graph().node_size(); ++i)
    twoStatic.mutable_graph()->mutable_node(i)->set_name(names[i]);
  runPass(twoStatic, passes::createOutlinePass(o), &report);
  CHECK(report["distinct_bodies"] == 2);
}

TEST_CASE("legalize --gelu tanh: the erf-GELU chain becomes ai.graphcore::Gelu (1e-3 of the exact form)",
          "[legalize][popart][pytorch]") {
  fs::path path = pytorchDir() / "bert-opset17.onnx";
  auto original = readProto(path);
  passes::LegalizeOptions o;
  o.dims = {{"batch", 2}, {"sequence", 8}};
  o.gelu = "tanh";
  nlohmann::json report;
  auto model = runPass(original, passes::createLegalizePass(o), &report);
  INFO(report.dump());
  size_t gelu = 0, erf = 0;
  for (const auto& n : model->graph().nodes()) {
    gelu += n->opType() == "Gelu" && n->domain() == "ai.graphcore";
    erf += n->opType() == "Erf";
  }
  CHECK(gelu == 2);
  CHECK(erf == 0);
  // legalize refuses while checkImport finds anything: what counts is that the written file keeps it so.
  CHECK(popart::checkImport(*reloaded(*model)).empty());
  checkSameMaths(original, mapBack(*model), 1e-3, 40);
  passes::LegalizeOptions sigmoid;
  sigmoid.gelu = "sigmoid";
  CHECK_THROWS_WITH(passes::createLegalizePass(sigmoid), Catch::Contains("gelu must be 'erf' or 'tanh'"));
}

TEST_CASE("legalize: the three erf-GELU forms become ai.graphcore::GeluErf with the same outputs",
          "[legalize][popart]") {
  // PyTorch's nn.functional.gelu, Hugging Face's x * 0.5 * (1 + erf(x / sqrt 2)),
  // and the form multiplying by 1/sqrt 2; a near miss (0.6 for 0.5) stays.
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 4] x) => (float[2, 4] y1, float[2, 4] y2, float[2, 4] y3, float[2, 4] y4) {
  s = Constant <value = float {1.4142135}> ()
  one = Constant <value = float {1.0}> ()
  half = Constant <value = float {0.5}> ()
  r = Constant <value = float {0.70710678}> ()
  near = Constant <value = float {0.6}> ()
  d1 = Div (x, s)
  e1 = Erf (d1)
  a1 = Add (e1, one)
  m1 = Mul (x, a1)
  y1 = Mul (m1, half)
  h2 = Mul (x, half)
  d2 = Div (x, s)
  e2 = Erf (d2)
  a2 = Add (one, e2)
  y2 = Mul (h2, a2)
  d3 = Mul (x, r)
  e3 = Erf (d3)
  a3 = Add (e3, one)
  m3 = Mul (a3, x)
  y3 = Mul (half, m3)
  d4 = Div (x, s)
  e4 = Erf (d4)
  a4 = Add (e4, one)
  m4 = Mul (x, a4)
  y4 = Mul (m4, near)
}
)");
  nlohmann::json report;
  auto out = runPass(m, passes::createLegalizePass({}), &report);
  INFO(report.dump());
  size_t gelu = 0, erf = 0;
  for (const auto& n : out->graph().nodes()) {
    gelu += n->opType() == "GeluErf";
    erf += n->opType() == "Erf";
  }
  CHECK(gelu == 3);
  CHECK(erf == 1);
  // legalize refuses while checkImport finds anything: what counts is that the written file keeps it so.
  CHECK(popart::checkImport(*reloaded(*out)).empty());
  checkSameMaths(m, mapBack(*out), 1e-5);
}

TEST_CASE("legalize: LayerNormalization without bias, and with a scale and bias that broadcast", "[legalize][popart]") {
  // PyTorch 2.1's LayerNorm(bias=False): a zero bias, the same maths.
  auto noBias = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y) <float[4] s = {1.0, 2.0, 0.5, -1.0}> {
  y = LayerNormalization <axis = -1, epsilon = 0.001> (x, s)
}
)");
  nlohmann::json report;
  auto legal = runPass(noBias, passes::createLegalizePass({}), &report);
  INFO(report.dump());
  CHECK(report["steps"]["layernorm_zero_bias"] == 1);
  CHECK(countOp(toProto(*legal), "GroupNormalization") == 1);
  CHECK(popart::checkImport(*reloaded(*legal)).empty());
  checkSameMaths(noBias, mapBack(*legal), 1e-4);

  // Normalised over the last two dimensions with a scale and bias of the last
  // one only: they broadcast to [3, 4]; the same maths as written out in full.
  auto broadcast = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y) <float[4] s = {1.0, 2.0, 0.5, -1.0}, float[4] b = {0.0, 0.1, -0.2, 3.0}> {
  y = LayerNormalization <axis = -2, epsilon = 0.001> (x, s, b)
}
)");
  auto full = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x) => (float[2, 3, 4] y)
    <float[3, 4] s = {1.0, 2.0, 0.5, -1.0, 1.0, 2.0, 0.5, -1.0, 1.0, 2.0, 0.5, -1.0},
     float[3, 4] b = {0.0, 0.1, -0.2, 3.0, 0.0, 0.1, -0.2, 3.0, 0.0, 0.1, -0.2, 3.0}> {
  y = LayerNormalization <axis = -2, epsilon = 0.001> (x, s, b)
}
)");
  auto legalBroadcast = runPass(broadcast, passes::createLegalizePass({}));
  CHECK(popart::checkImport(*reloaded(*legalBroadcast)).empty());
  checkSameMaths(full, mapBack(*legalBroadcast), 1e-4);
}

TEST_CASE("legalize and validate --popart-version: GeluErf only from PopART 3.3", "[legalize][popart][version]") {
  // The data: every ai.graphcore op has the release it appeared in.
  for (const auto& [op, _] : graphcoreOpsData()["ops"].items()) {
    INFO(op);
    CHECK(graphcoreOpSince(op).has_value());
  }
  CHECK(graphcoreOpSince("GeluErf") == PopartVersion{3, 3});
  CHECK(graphcoreOpSince("Gelu") == PopartVersion{1, 2});
  CHECK(newestPopart() == PopartVersion{3, 4});
  CHECK(parsePopartVersion("3.2") == PopartVersion{3, 2});
  for (const char* bad : {"3", "3.", ".2", "3.x", "3.2.1", "-3.2", "1234.1", " 3.2", ""}) {
    INFO(bad);
    CHECK_FALSE(parsePopartVersion(bad).has_value());
  }

  // Before 3.3 the erf GELU stays as ai.onnx ops, which PopART 3.2 imports; the same maths.
  fs::path path = pytorchDir() / "bert-opset17.onnx";
  auto original = readProto(path);
  passes::LegalizeOptions o;
  o.dims = {{"batch", 2}, {"sequence", 8}};
  o.popartVersion = "3.2";
  nlohmann::json report;
  auto model = runPass(original, passes::createLegalizePass(o), &report);
  INFO(report.dump());
  CHECK(report["popart_version"] == "3.2");
  CHECK(report["steps"]["patterns"].empty());
  auto written = toProto(*model);
  CHECK(countOp(written, "GeluErf") == 0);
  CHECK(countOp(written, "Erf") == 2);
  CHECK(popart::checkImport(*reloaded(*model), PopartVersion{3, 2}).empty());
  checkSameMaths(original, mapBack(*model), 1e-4, 40);
  // --gelu tanh: ai.graphcore::Gelu, there since 1.2.
  o.gelu = "tanh";
  auto tanh = toProto(*runPass(original, passes::createLegalizePass(o)));
  CHECK(countOp(tanh, "Gelu") == 2);
  passes::LegalizeOptions bad;
  bad.popartVersion = "3.x";
  CHECK_THROWS_WITH(passes::createLegalizePass(bad), Catch::Contains("popart_version must be a release X.Y"));

  // validate: a GeluErf is an op-version finding for 3.2, nothing for 3.3.
  auto gelu = parseModel(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2, 4] x) => (float[2, 4] y) { y = ai.graphcore.GeluErf (x) }
)");
  auto m = runPass(gelu, passes::createLegalizePass({}));
  auto old = popart::checkImport(*m, PopartVersion{3, 2});
  REQUIRE(old.size() == 1);
  CHECK(old[0].check == "op-version");
  CHECK_THAT(old[0].message, Catch::Contains("exists from PopART 3.3 on; the target is PopART 3.2"));
  CHECK(popart::checkImport(*m, PopartVersion{3, 3}).empty());
  CHECK(popart::checkImport(*m).empty());
  // The CLI: the finding, exit 1; a bad version or one without --target popart, exit 2.
  TempDir dir;
  writeModel(*m, (dir / "g.onnx").string());
  std::string file = (dir / "g.onnx").string();
  auto r = run(graphrwBin() + " validate --target popart --popart-version 3.2 '" + file + "'");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("popart:op-version"));
  CHECK(run(graphrwBin() + " validate --target popart --popart-version 3.3 '" + file + "'").status == 0);
  r = run(graphrwBin() + " validate --target popart --popart-version 3.x '" + file + "'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("not a version X.Y"));
  CHECK(run(graphrwBin() + " validate --popart-version 3.2 '" + file + "'").status == 2);
}

TEST_CASE("legalize: a local function at another ai.onnx version is converted as it is inlined", "[legalize][popart]") {
  // Inlined as-is, the body's Relu-14 and Add-14 would sit in an ai.onnx 13 graph;
  // legalize has no --convert-opset to offer, so it converts them itself.
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
g (float[2, 4] x) => (float[2, 4] y) {
  y = local.Act (x)
}
<domain: "local", opset_import: ["" : 14]>
Act (a) => (b) {
  r = Relu (a)
  b = Add (r, a)
}
)");
  auto model = runPass(proto, passes::createLegalizePass({}));
  CHECK(model->functions().empty());
  CHECK(countOp(toProto(*model), "Relu") == 1);
  CHECK(popart::checkImport(*reloaded(*model)).empty());
  checkSameMaths(proto, *model);
}

TEST_CASE("legalize: sparse initializers become dense, with the same maths", "[legalize][popart]") {
  // PopART makes tensors of graph.initializer only (willow/src/ir.cpp:2272).
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) <float[2, 3] w = {0, 1.5, 0, 0, 0, -2}, float[3] b = {0, 0, 4}> {
  a = Add (x, w)
  y = Mul (a, b)
}
)");
  sparsify(proto, "w", false);
  sparsify(proto, "b", true);
  REQUIRE(proto.graph().sparse_initializer_size() == 2);
  auto model = runPass(proto, passes::createLegalizePass({}));
  auto written = writeAndRead(*model);
  CHECK(written.graph().sparse_initializer_size() == 0);
  CHECK(popart::checkImport(*reloaded(*model)).empty());
  std::map<std::string, std::string> raw;
  for (const auto& t : written.graph().initializer()) raw[t.name()] = t.raw_data();
  REQUIRE(raw.count("w"));
  std::vector<float> w(6);
  REQUIRE(raw["w"].size() == sizeof(float) * w.size());
  std::memcpy(w.data(), raw["w"].data(), raw["w"].size());
  CHECK(w == std::vector<float>{0, 1.5f, 0, 0, 0, -2});
  checkSameMaths(proto, *model);
}

TEST_CASE("legalize: the report's matched is what its steps matched and rewrote", "[legalize][report]") {
  auto model = loadModel((pytorchDir() / "gpt-opset15.onnx").string());
  passes::LegalizeOptions o;
  o.dims = {{"batch", 2}, {"sequence", 8}};
  PassManager pm({true, std::nullopt, ""});
  pm.add(passes::createLegalizePass(o));
  auto entry = pm.run(*model)[0];
  INFO(entry.dump());
  CHECK(entry["nodes_added"].get<size_t>() > 0);
  CHECK(entry["nodes_removed"].get<size_t>() > 0);
  // Each pass step reports its own matched; legalize's own rewrites report their counts.
  size_t sum = 0;
  for (const char* name : {"set-shapes", "fold", "replace", "opset", "fold_after_opset"}) {
    INFO(name);
    REQUIRE(entry["steps"][name].contains("matched"));
    sum += entry["steps"][name]["matched"].get<size_t>();
  }
  CHECK(entry["steps"]["set-shapes"]["matched"] == 1);  // input_ids
  CHECK(entry["steps"]["opset"]["matched"].get<size_t>() > 0);
  for (const auto& [name, n] : entry["steps"]["patterns"].items()) sum += n.get<size_t>();
  for (const char* own : {"dropout_identity_removed", "layernorm_zero_bias", "types_made_static",
                          "noop_shape_ops_removed", "placement_filled"})
    if (entry["steps"].contains(own)) sum += entry["steps"][own].get<size_t>();
  CHECK(entry["matched"].get<size_t>() == sum);
  CHECK(sum > 0);
}
