// `validate --target popart`: for each finding class, a model that triggers it
// and one that does not.
#include <catch2/catch.hpp>

#include <onnx/defs/schema.h>

#include <set>

#include "analysis/extensions.h"
#include "analysis/schemas.h"
#include "io/loader.h"
#include "support.h"
#include "target/popart/check.h"
#include "target/popart/graphcore_ops.h"
#include "target/popart/popart.h"

using namespace graphrw;

namespace {

// A model from ONNX's text syntax.
std::unique_ptr<ir::Model> model(const std::string& text) { return loadModel(test::parseModel(text)); }

// The findings of one class, as "where: message" lines.
std::vector<std::string> findings(const ir::Model& m, const std::string& check) {
  std::vector<std::string> out;
  for (const auto& f : popart::checkImport(m))
    if (f.check == check) out.push_back(f.where + ": " + f.message);
  return out;
}

std::string all(const ir::Model& m) {
  std::string s;
  for (const auto& f : popart::checkImport(m)) s += f.check + ": " + f.where + ": " + f.message + "\n";
  return s;
}

// A model whose i-th Call gets the main graph of bodies[i] as its callee;
// the text parser leaves nodes unnamed, so the Calls are named call1, call2, ...
std::unique_ptr<ir::Model> withCallees(const std::string& text, const std::vector<std::string>& bodies) {
  onnx::ModelProto m = test::parseModel(text);
  size_t i = 0;
  for (auto& n : *m.mutable_graph()->mutable_node()) {
    if (n.op_type() != "Call") continue;
    onnx::ModelProto body = test::parseModel(bodies.at(i++));
    n.set_name("call" + std::to_string(i));
    auto* a = n.add_attribute();
    a->set_name("callee");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = body.graph();
  }
  return loadModel(m);
}

const char* kClean = R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 4] x) => (float[2, 4] y) {
  a = Relu(x)
  y = Sigmoid(a)
}
)";

}  // namespace

TEST_CASE("popart: a model PopART imports has no finding", "[popart]") {
  auto m = model(kClean);
  INFO(all(*m));
  CHECK(popart::checkImport(*m).empty());
}

TEST_CASE("popart: IR version, opsets and domains", "[popart]") {
  auto ir8 = model(R"(
<ir_version: 8, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) { y = Relu(x) }
)");
  REQUIRE(findings(*ir8, "ir-version").size() == 1);
  CHECK_THAT(findings(*ir8, "ir-version")[0], Catch::Contains("IR version 8"));
  CHECK(findings(*model(kClean), "ir-version").empty());

  auto opset13 = model(R"(
<ir_version: 6, opset_import: ["" : 13, "ai.graphcore" : 2, "com.microsoft" : 1]>
g (float[2] x) => (float[2] y) { y = Relu(x) }
)");
  auto opsets = findings(*opset13, "opset");
  REQUIRE(opsets.size() == 2);
  CHECK_THAT(opsets[0] + opsets[1], Catch::Contains("ai.onnx opset 13") && Catch::Contains("ai.graphcore opset 2"));
  REQUIRE(findings(*opset13, "domain").size() == 1);
  CHECK_THAT(findings(*opset13, "domain")[0], Catch::Contains("com.microsoft"));
  // Relu exists at every version PopART has: no per-node noise besides the opset finding.
  CHECK(findings(*opset13, "op").empty());
  CHECK(findings(*model(kClean), "opset").empty());
  CHECK(findings(*model(kClean), "domain").empty());
}

TEST_CASE("popart: local functions", "[popart]") {
  auto m = model(R"(
<ir_version: 8, opset_import: ["" : 11, "local" : 1]>
g (float[2] x) => (float[2] y) { y = local.F(x) }
<domain: "local", opset_import: ["" : 11]>
F (a) => (b) { b = Relu(a) }
)");
  REQUIRE(findings(*m, "functions").size() == 1);
  CHECK_THAT(findings(*m, "functions")[0], Catch::Contains("local::F"));
  REQUIRE(findings(*m, "op").size() == 1);
  CHECK_THAT(findings(*m, "op")[0], Catch::Contains("calls local function local::F"));
  CHECK(findings(*model(kClean), "functions").empty());
}

TEST_CASE("popart: sparse initializers, in any graph", "[popart]") {
  const char* text = R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 2] x, bool c) => (float[2, 2] y) <float[2, 2] w = {0, 1, 0, 0}> {
  a = Add(x, w)
  y = If (c) <then_branch = t () => (float[2, 2] o) <float[2, 2] v = {2, 0, 0, 0}> { o = Add(a, v) },
              else_branch = e () => (float[2, 2] o) { o = Identity(a) }>
}
)";
  CHECK(popart::checkImport(*model(text)).empty());
  auto p = test::parseModel(text);
  test::sparsify(p, "w", false);
  auto* branch = p.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
  onnx::ModelProto sub;
  *sub.mutable_graph() = *branch;
  test::sparsify(sub, "v", true);
  *branch = sub.graph();
  auto m = loadModel(p);
  INFO(all(*m));
  CHECK(popart::checkImport(*m).size() == 2);
  auto found = findings(*m, "sparse-initializer");
  REQUIRE(found.size() == 2);
  CHECK_THAT(found[0] + found[1], Catch::Contains("sparse initializer 'w': PopART reads dense initializers only") &&
                                      Catch::Contains("sparse initializer 'v'"));
}

TEST_CASE("popart: dynamic input dimensions", "[popart]") {
  auto m = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[batch, 4] x, float[2, 4] w) => (float[batch, 4] y) { y = Add(x, w) }
)");
  auto f = findings(*m, "dynamic-shape");
  REQUIRE(f.size() == 1);
  CHECK_THAT(f[0], Catch::Contains("graph input 'x'") && Catch::Contains("dimension 0 is 'batch'"));
  CHECK(findings(*model(kClean), "dynamic-shape").empty());
}

TEST_CASE("popart: ops without a factory at the version the opset selects", "[popart]") {
  auto range = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y, float[4] r) <float s = {0.0}, float l = {4.0}, float d = {1.0}> {
  y = Relu(x)
  r = Range(s, l, d)
}
)");
  auto f = findings(*range, "op");
  REQUIRE(f.size() == 1);
  CHECK_THAT(f[0], Catch::Contains("Range") && Catch::Contains("PopART has no Range op"));

  auto upsample = model(R"(
<ir_version: 3, opset_import: ["" : 8]>
g (float[1, 1, 2, 2] x) => (float[1, 1, 4, 4] y) { y = Upsample <scales = [1.0, 1.0, 2.0, 2.0]> (x) }
)");
  f = findings(*upsample, "op");
  REQUIRE(f.size() == 1);
  CHECK_THAT(f[0], Catch::Contains("opset 8 selects Upsample-7, PopART implements Upsample 9"));

  // Folded (Shape, Constant, ConstantOfShape) and rewritten (Gemm, Tan) ops import.
  auto folded = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 3] x, float[3, 3] w) => (float[2, 3] y, int64[2] s) {
  s = Shape(x)
  t = Tan(x)
  y = Gemm(t, w)
}
)");
  INFO(all(*folded));
  CHECK(findings(*folded, "op").empty());
}

TEST_CASE("popart: ai.graphcore ops as PopART's factories read them", "[popart]") {
  registerGraphcoreOps();
  const auto* dyn = onnx::OpSchemaRegistry::Schema("DynamicSlice", 1, "ai.graphcore");
  REQUIRE(dyn);
  CHECK(dyn->attributes().count("sizes"));
  CHECK_FALSE(dyn->attributes().count("size"));
  CHECK(dyn->max_input() == 3);
  CHECK(onnx::OpSchemaRegistry::Schema("DynamicZero", 1, "ai.graphcore")->max_input() == 2);
  CHECK(
      onnx::OpSchemaRegistry::Schema("GroupNormalization", 1, "ai.graphcore")->attributes().at("num_groups").required);
  CHECK(onnx::OpSchemaRegistry::Schema("PrintTensor", 1, "ai.graphcore")->attributes().size() == 10);
  CHECK(onnx::OpSchemaRegistry::Schema("Call", 1, "ai.graphcore")->attributes().count("num_outputs"));
  for (const char* op : {"ReplicatedAllReduce", "ReplicatedReduceScatter", "ReplicatedAllGather", "Init", "ScaledAdd",
                         "Remainder", "Fmod", "Round"})
    CHECK(onnx::OpSchemaRegistry::Schema(op, 1, "ai.graphcore"));

  auto bad = model(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[4, 8] x, float[8] s, float[8] b, uint32[1] o) => (float[4, 8] y, float[4, 8] z) {
  y, m, v = ai.graphcore.GroupNormalization <epsilon = 0.001> (x, s, b)
  z = ai.graphcore.DynamicZero <axes = [0], sizes = [1]> (x, o, x)
}
)");
  auto f = findings(*bad, "graphcore-op");
  REQUIRE(f.size() == 2);
  CHECK_THAT(f[0], Catch::Contains("lacks attribute 'num_groups'"));
  CHECK_THAT(f[1], Catch::Contains("has 3 inputs; ai.graphcore::DynamicZero takes 2"));

  auto good = model(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[4, 8] x, float[8] s, float[8] b, uint32[1] o) => (float[4, 8] y, float[4, 8] z) {
  y, m, v = ai.graphcore.GroupNormalization <num_groups = 1, epsilon = 0.001> (x, s, b)
  z = ai.graphcore.DynamicZero <axes = [0], sizes = [1]> (x, o)
}
)");
  INFO(all(*good));
  CHECK(popart::checkImport(*good).empty());
}

TEST_CASE("popart: __ attribute types, values and companions", "[popart]") {
  auto bad = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 2] x) => (float[2, 2] y) {
  a = Relu <__ipu_number = 1.0> (x)
  b = MatMul <__serialize_matmul_mode = "output_channels"> (a, a)
  c = Identity <__exclude_patterns = ["PreUniRepl", "NoSuchPattern"]> (b)
  d = Relu <__outline = ["key"]> (c)
  y = Relu <__inplace_op_names = ["a", "b"], __inplace_op_priorities = [1.0]> (d)
}
)");
  auto f = findings(*bad, "attribute");
  std::string text;
  for (auto& s : f) text += s + "\n";
  INFO(text);
  CHECK_THAT(text, Catch::Contains("'__ipu_number' is FLOAT but PopART reads it as INT"));
  CHECK_THAT(text, Catch::Contains("'__serialize_matmul_mode' needs '__serialize_matmul_factor'"));
  CHECK_THAT(text, Catch::Contains("'__serialize_matmul_mode' needs '__serialize_matmul_precision'"));
  CHECK_THAT(text, Catch::Contains("'NoSuchPattern', which is not a PopART pattern"));
  CHECK_THAT(text, Catch::Contains("odd number of strings"));
  CHECK_THAT(text, Catch::Contains("must have as many values (2 and 1)"));
  CHECK(f.size() == 6);

  auto good = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[1, 2, 4, 4] x, float[2, 2, 1, 1] w) => (float[1, 2, 4, 4] y) {
  a = Conv <__partials_type = ["half"], __available_memory = [0.5], __enable_conv_dithering = [1]> (x, w)
  b = MatMul <__serialize_matmul_mode = "output_channels", __serialize_matmul_factor = 2,
      __serialize_matmul_precision = 1, __partials_type = "HALF"> (a, a)
  c = Identity <__exclude_patterns = ["PreUniRepl", "PostNRepl"], __recompute_output_in_backward_pass = 1> (b)
  y = Relu <__outline = ["key", "value"], __schedule_priority = 1.0> (c)
}
)");
  INFO(all(*good));
  CHECK(findings(*good, "attribute").empty());
  // The list forms are for convolutions only.
  auto listOnRelu = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) { y = Relu <__available_memory = [0.5]> (x) }
)");
  REQUIRE(findings(*listOnRelu, "attribute").size() == 1);
  CHECK_THAT(findings(*listOnRelu, "attribute")[0], Catch::Contains("FLOATS but PopART reads it as FLOAT"));
}

TEST_CASE("popart: placement all-or-none, one IPU per stage, stages in data order", "[popart]") {
  auto partial = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) {
  k = Constant <value = float[2] {1.0, 2.0}> ()
  a = Add <__ipu_number = 0> (x, k)
  y = Relu(a)
}
)");
  auto f = findings(*partial, "placement");
  REQUIRE(f.size() == 1);  // the Constant is folded at import: exempt
  CHECK_THAT(f[0], Catch::Contains("node 'the node producing 'y' (Relu)'") || Catch::Contains("Relu"));
  CHECK_THAT(f[0], Catch::Contains("has no __ipu_number"));

  auto placed = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) {
  k = Constant <value = float[2] {1.0, 2.0}> ()
  a = Add <__ipu_number = 0, __pipeline_stage = 0> (x, k)
  y = Relu <__ipu_number = 1, __pipeline_stage = 1> (a)
}
)");
  INFO(all(*placed));
  CHECK(popart::checkImport(*placed).empty());

  auto twoIpus = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) {
  a = Relu <__ipu_number = 0, __pipeline_stage = 0> (x)
  y = Relu <__ipu_number = 1, __pipeline_stage = 0> (a)
}
)");
  REQUIRE(findings(*twoIpus, "stage-ipu").size() == 1);
  CHECK_THAT(findings(*twoIpus, "stage-ipu")[0], Catch::Contains("pipeline stage 0: is on IPUs 0"));

  auto backwards = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) {
  a = Relu <__ipu_number = 1, __pipeline_stage = 1> (x)
  y = Relu <__ipu_number = 0, __pipeline_stage = 0> (a)
}
)");
  REQUIRE(findings(*backwards, "stage-order").size() == 1);
  CHECK_THAT(findings(*backwards, "stage-order")[0], Catch::Contains("in the later stage 1"));

  auto gap = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) {
  a = Relu <__ipu_number = 0, __pipeline_stage = 0> (x)
  y = Relu <__ipu_number = 1, __pipeline_stage = 2> (a)
}
)");
  REQUIRE(findings(*gap, "stage-order").size() == 1);
  CHECK_THAT(findings(*gap, "stage-order")[0], Catch::Contains("stage 1 has no op"));
}

TEST_CASE("popart: callees", "[popart]") {
  const char* relu = R"(
<ir_version: 6, opset_import: ["" : 11]>
layer (float[2] a) => (float[2] b) { b = Relu <__ipu_number = 0> (a) }
)";
  const char* sigmoid = R"(
<ir_version: 6, opset_import: ["" : 11]>
layer (float[2] a) => (float[2] b) { b = Sigmoid <__ipu_number = 0> (a) }
)";
  const char* twoNamedCalls = R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2] x) => (float[2] y) {
  h = ai.graphcore.Call <__ipu_number = 0> (x)
  y = ai.graphcore.Call <__ipu_number = 0> (h)
}
)";
  auto same = withCallees(twoNamedCalls, {relu, relu});
  INFO(all(*same));
  CHECK(popart::checkImport(*same).empty());

  auto differ = withCallees(twoNamedCalls, {relu, sigmoid});
  auto f = findings(*differ, "callee-name");
  REQUIRE(f.size() == 1);
  CHECK_THAT(f[0], Catch::Contains("call2") && Catch::Contains("differs from the one node 'call1'"));

  const char* withWeight = R"(
<ir_version: 6, opset_import: ["" : 11]>
layer (float[2] a) => (float[2] b) <float[2] w = {1.0, 2.0}> { b = Add(a, w) }
)";
  auto withInit = withCallees(twoNamedCalls, {withWeight, withWeight});
  REQUIRE(findings(*withInit, "callee-initializer").size() == 1);
  CHECK_THAT(findings(*withInit, "callee-initializer")[0], Catch::Contains("callee 'layer'"));

  const char* checkpointed = R"(
<ir_version: 6, opset_import: ["" : 11]>
layer (float[2] a) => (float[2] b) {
  r = Relu <__ipu_number = 0> (a)
  b = Identity <__recompute_output_in_backward_pass = 1, __ipu_number = 0> (r)
}
)";
  auto ck = withCallees(twoNamedCalls, {checkpointed, checkpointed});
  REQUIRE(findings(*ck, "callee-checkpoint").size() == 1);  // one body, reported once
  CHECK(findings(*ck, "callee-placement").empty());

  const char* elsewhere = R"(
<ir_version: 6, opset_import: ["" : 11]>
layer (float[2] a) => (float[2] b) { b = Relu <__ipu_number = 1> (a) }
)";
  auto placedElsewhere = withCallees(twoNamedCalls, {elsewhere, elsewhere});
  auto p = findings(*placedElsewhere, "callee-placement");
  REQUIRE(p.size() == 2);  // once per Call
  CHECK_THAT(p[0], Catch::Contains("has __ipu_number 1 inside callee 'layer'"));
}

TEST_CASE("popart: shape-like callee inputs must agree between call sites", "[popart]") {
  const char* reshape = R"(
<ir_version: 6, opset_import: ["" : 11]>
view (float[2, 3] a, int64[2] s) => (float[3, 2] b) { b = Reshape(a, s) }
)";
  auto build = [&](const char* main) {
    onnx::ModelProto m = test::parseModel(main);
    int i = 0;
    for (auto& n : *m.mutable_graph()->mutable_node()) {
      if (n.op_type() != "Call") continue;
      n.set_name("call" + std::to_string(++i));
      auto* a = n.add_attribute();
      a->set_name("callee");
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = test::parseModel(reshape).graph();
    }
    return loadModel(m);
  };
  auto differ = build(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2, 3] x) => (float[3, 2] y, float[3, 2] z) <int64[2] s1 = {3, 2}, int64[2] s2 = {-1, 2}> {
  y = ai.graphcore.Call (x, s1)
  z = ai.graphcore.Call (x, s2)
}
)");
  auto f = findings(*differ, "callee-shape-operand");
  REQUIRE(f.size() == 1);
  CHECK_THAT(f[0], Catch::Contains("'s2' as input 1 of callee 'view'") && Catch::Contains("first call node 'call1'"));

  auto equal = build(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2, 3] x) => (float[3, 2] y, float[3, 2] z) <int64[2] s1 = {3, 2}, int64[2] s2 = {3, 2}> {
  y = ai.graphcore.Call (x, s1)
  z = ai.graphcore.Call (x, s2)
}
)");
  INFO(all(*equal));
  CHECK(popart::checkImport(*equal).empty());
}

TEST_CASE("popart: the CLI reports findings with the class and exits 1", "[popart][cli]") {
  test::TempDir dir;
  test::writeProto(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N] x) => (float[N] y) { y = Relu(x) }
)"),
                   dir / "m.onnx");
  auto r = test::run(test::graphrwBin() + " validate " + (dir / "m.onnx").string() + " --target popart");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("popart:ir-version: model: IR version 8"));
  CHECK_THAT(r.out, Catch::Contains("popart:opset: model: imports ai.onnx opset 13"));
  CHECK_THAT(r.out, Catch::Contains("popart:dynamic-shape: graph input 'x'"));
  auto j = test::run(test::graphrwBin() + " validate " + (dir / "m.onnx").string() + " --target popart --json");
  auto report = nlohmann::json::parse(j.out);
  CHECK(report["target"] == "popart");
  CHECK(report["valid"] == false);
  // Without --target the model is valid ONNX.
  CHECK(test::run(test::graphrwBin() + " validate " + (dir / "m.onnx").string()).status == 0);
}

TEST_CASE("popart: replace writes DynamicSlice with 'sizes' as PopART's factory reads it", "[popart][cli]") {
  test::TempDir dir;
  test::writeProto(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4, 8] x, int32[1] o) => (float[1, 8] y) { y = Gather(x, o) }
)"),
                   dir / "m.onnx");
  std::string replace = test::graphrwBin() + " replace " + (dir / "m.onnx").string() +
                        " --select op_type=Gather --with ai.graphcore::DynamicSlice --set axes=[0]";
  auto ok = test::run(replace + " --set sizes=[1] -o " + (dir / "ok.onnx").string());
  CHECK(ok.status == 0);
  CHECK(test::run(test::graphrwBin() + " validate " + (dir / "ok.onnx").string()).status == 0);
  auto old = test::run(replace + " --set size=[1] -o " + (dir / "old.onnx").string());
  CHECK(old.status == 2);
  CHECK_THAT(old.err, Catch::Contains("has no attribute 'size' (did you mean 'sizes'?)"));
}

namespace {

// The classes of all findings, so a test can check that a model fails for its
// own reason and nothing else.
std::set<std::string> classes(const ir::Model& m) {
  std::set<std::string> out;
  for (const auto& f : popart::checkImport(m)) out.insert(f.check);
  return out;
}

const char* kTwoStages = R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 2] x) => (float[2, 2] y) <float[2, 2] W = {1, 2, 3, 4}> {
  a = MatMul <__ipu_number = 0, __pipeline_stage = 0> (x, W)
  y = MatMul <__ipu_number = IPU, __pipeline_stage = 1> (a, W)
}
)";

std::string withIpu(std::string text, const std::string& ipu) { return text.replace(text.find("IPU"), 3, ipu); }

}  // namespace

TEST_CASE("popart: a weight read on two IPUs while pipelining", "[popart][training]") {
  auto split = model(withIpu(kTwoStages, "1"));
  INFO(all(*split));
  REQUIRE(findings(*split, "weight-ipus").size() == 1);
  CHECK_THAT(findings(*split, "weight-ipus")[0], Catch::Contains("initializer 'W': is read on IPU 0") &&
                                                     Catch::Contains("IPU 1") && Catch::Contains("stage 1") &&
                                                     Catch::Contains("pipeline.cpp:142"));
  CHECK(classes(*split) == std::set<std::string>{"weight-ipus"});
  // Both stages on one IPU: nothing to copy.
  auto together = model(withIpu(kTwoStages, "0"));
  INFO(all(*together));
  CHECK(popart::checkImport(*together).empty());
  // Two IPUs without pipelining (sharding): PopART copies the weight.
  auto sharded = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 2] x) => (float[2, 2] y) <float[2, 2] W = {1, 2, 3, 4}> {
  a = MatMul <__ipu_number = 0> (x, W)
  y = MatMul <__ipu_number = 1> (a, W)
}
)");
  CHECK(popart::checkImport(*sharded).empty());
}

TEST_CASE("popart: Recompute marks while pipelining, checkpoints are fine", "[popart][training]") {
  const char* text = R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2] x) => (float[2] y) {
  a = Relu <__ipu_number = 0, __pipeline_stage = 0, __recompute_output_in_backward_pass = MARK> (x)
  b = Sigmoid <__ipu_number = 0, __pipeline_stage = 0, __recompute_output_in_backward_pass = MARK> (a)
  y = Relu <__ipu_number = 1, __pipeline_stage = 1> (b)
}
)";
  auto mark = [&](const std::string& value) {
    std::string t = text;
    for (size_t at; (at = t.find("MARK")) != std::string::npos;) t.replace(at, 4, value);
    return model(t);
  };
  auto recompute = mark("2");
  INFO(all(*recompute));
  REQUIRE(findings(*recompute, "pipeline-recompute").size() == 1);
  CHECK_THAT(findings(*recompute, "pipeline-recompute")[0],
             Catch::Contains("2 ops are marked Recompute") && Catch::Contains("pipeline.cpp:1344"));
  CHECK(classes(*recompute) == std::set<std::string>{"pipeline-recompute"});
  CHECK(popart::checkImport(*mark("1")).empty());  // Checkpoint marks
  // Without pipelining, Recompute marks are PopART's to use.
  std::string unstaged = text;
  for (size_t at; (at = unstaged.find(", __pipeline_stage = ")) != std::string::npos;) unstaged.erase(at, 22);
  for (size_t at; (at = unstaged.find("MARK")) != std::string::npos;) unstaged.replace(at, 4, "2");
  auto sharded = model(unstaged);
  INFO(all(*sharded));
  CHECK(popart::checkImport(*sharded).empty());
}

TEST_CASE("popart: a shape operand computed from a graph input, directly or through a Call", "[popart][training]") {
  auto direct = model(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 3] x, int64[2] s) => (float[3, 2] y) {
  t = Cast <to = 7> (s)
  y = Reshape (x, t)
}
)");
  INFO(all(*direct));
  REQUIRE(findings(*direct, "shape-operand").size() == 1);
  CHECK_THAT(findings(*direct, "shape-operand")[0],
             Catch::Contains("input 1 ('t') is computed from the graph input 's'") && Catch::Contains("op.cpp:1246"));
  CHECK(classes(*direct) == std::set<std::string>{"shape-operand"});

  const char* body = R"(
<ir_version: 6, opset_import: ["" : 11]>
body (float[2, 3] a, int64[2] b) => (float[3, 2] c) {
  c = Reshape (a, b)
}
)";
  auto throughCall = withCallees(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2, 3] x, int64[2] s) => (float[3, 2] y) {
  y = ai.graphcore.Call <num_outputs = 1> (x, s)
}
)",
                                 {body});
  INFO(all(*throughCall));
  REQUIRE(findings(*throughCall, "shape-operand").size() == 1);
  CHECK_THAT(findings(*throughCall, "shape-operand")[0], Catch::Contains("computed from the graph input 's'"));
  CHECK(classes(*throughCall) == std::set<std::string>{"shape-operand"});

  // Constant data: an initializer passed to the Call, and a Shape PopART folds at import.
  auto constant = withCallees(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2, 3] x, float[3, 2] z) => (float[3, 2] y, float[3, 2] w) <int64[2] s = {3, 2}> {
  y = ai.graphcore.Call <num_outputs = 1> (x, s)
  shape = Shape (z)
  w = Reshape (x, shape)
}
)",
                              {body});
  INFO(all(*constant));
  CHECK(popart::checkImport(*constant).empty());
}

TEST_CASE("popart: placement is all or none over every graph, callees included", "[popart][training]") {
  const char* callee = R"(
<ir_version: 6, opset_import: ["" : 11]>
body (float[2] a) => (float[2] c) {
  c = Relu <__ipu_number = 1> (a)
}
)";
  auto placedInside = withCallees(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2] x) => (float[2] y) {
  y = ai.graphcore.Call <num_outputs = 1> (x)
}
)",
                                  {callee});
  INFO(all(*placedInside));
  REQUIRE(findings(*placedInside, "placement").size() == 1);
  CHECK_THAT(
      findings(*placedInside, "placement")[0],
      Catch::Contains("inside a subgraph while no op of the main graph has one") && Catch::Contains("ir.cpp:1971"));
  CHECK(classes(*placedInside) == std::set<std::string>{"placement"});
  auto placedBoth = withCallees(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2] x) => (float[2] y) {
  y = ai.graphcore.Call <num_outputs = 1, __ipu_number = 1> (x)
}
)",
                                {callee});
  INFO(all(*placedBoth));
  CHECK(popart::checkImport(*placedBoth).empty());
}

TEST_CASE("popart: GroupNormalization's scale and bias are one value per channel", "[popart][training]") {
  const char* text = R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2, 4, 3] x) => (float[2, 4, 3] y) <float[SCALE] s = {1, 1, 1, 1}, float[4] b = {0, 0, 0, 0}> {
  y, mean, invstd = ai.graphcore.GroupNormalization <num_groups = 2, epsilon = 0.001> (x, s, b)
}
)";
  auto scale = [&](const std::string& shape) {
    std::string t = text;
    return model(t.replace(t.find("SCALE"), 5, shape));
  };
  auto broadcast = scale("1, 4");
  INFO(all(*broadcast));
  REQUIRE(findings(*broadcast, "groupnorm-params").size() == 1);
  CHECK_THAT(findings(*broadcast, "groupnorm-params")[0], Catch::Contains("scale 's' has shape [1,4]") &&
                                                              Catch::Contains("shape [4]") &&
                                                              Catch::Contains("groupnormx.cpp:62"));
  CHECK(classes(*broadcast) == std::set<std::string>{"groupnorm-params"});
  auto perChannel = scale("4");
  INFO(all(*perChannel));
  CHECK(popart::checkImport(*perChannel).empty());
}

TEST_CASE("popart: the target's part in the generic layers", "[popart]") {
  // The extension PopART registers (analysis/extensions.h), as generic code sees it.
  REQUIRE(ext::domainVersion("ai.graphcore") == graphcoreOpsData()["version"].get<int>());
  CHECK_FALSE(ext::domainVersion("com.example"));
  CHECK(domainVersionRanges().at("ai.graphcore") == std::pair<int, int>{1, 1});
  CHECK(findSchema("Gelu", 1, "ai.graphcore") != nullptr);
  CHECK(ext::reservedType("__ipu_number") == onnx::AttributeProto::INT);
  CHECK_FALSE(ext::reservedType("__no_such_attribute"));
  CHECK(ext::placementKeys() == std::vector<std::string>{"__ipu_number", "__pipeline_stage", "__execution_phase"});
  auto m = model(R"(
<ir_version: 6, opset_import: ["" : 11, "ai.graphcore" : 1]>
g (float[2] x) => (float[2] y) {
  a = Relu <__ipu_number: int = 1, __pipeline_stage: int = 2, __other: int = 3> (x)
  y = ai.graphcore.Call <__ipu_number: float = 1.0> (a)
}
)");
  const auto& nodes = m->graph().nodes();
  auto placement = ext::placementOf(*nodes.front());
  REQUIRE(placement.size() == 2);
  CHECK(placement[0].name() == "__ipu_number");
  CHECK(placement[1].name() == "__pipeline_stage");
  CHECK(ext::placementOf(*nodes.back()).empty());  // a FLOAT __ipu_number is no placement
  CHECK(ext::callOp(*nodes.front()) == nullptr);
  REQUIRE(ext::callOp(*nodes.back()) != nullptr);
  CHECK(ext::callOp(*nodes.back())->calleeAttribute == "callee");
}
