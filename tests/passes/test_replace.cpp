#include <catch2/catch.hpp>

#include <set>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "driver/validate.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/replace/replace.h"
#include "seed_models.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/popart.h"

using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;
using nlohmann::json;

namespace {

// LayerNormalization over the last axis, written out; its weights stay formal inputs.
const char* kLayerNormTemplate = R"(
<domain: "t", opset_import: ["" : 17]>
LayerNormDecomposed <axis, epsilon> (x, scale, bias) => (y) {
  mean = ReduceMean <axes = [-1]> (x)
  d = Sub (x, mean)
  sq = Mul (d, d)
  var = ReduceMean <axes = [-1]> (sq)
  eps = Constant <value_float = @epsilon> ()
  ve = Add (var, eps)
  sd = Sqrt (ve)
  n = Div (d, sd)
  s = Mul (n, scale)
  y = Add (s, bias)
}
)";

const char* kSoftmaxTemplate = R"(
<domain: "t", opset_import: ["" : 17]>
SoftmaxDecomposed (x) => (y) {
  m = ReduceMax <axes = [-1]> (x)
  c = Sub (x, m)
  e = Exp (c)
  ax = Constant <value_ints = [-1]> ()
  s = ReduceSum (e, ax)
  y = Div (e, s)
}
)";

passes::Replacement opRule(const std::string& select, const std::string& with, json set = json::object()) {
  passes::Replacement r;
  r.select = sel(select);
  r.where = "test rule " + with;
  passes::parseTarget(with, r);
  for (const auto& [k, v] : set.items()) r.set.emplace_back(k, v);
  return r;
}

passes::Replacement templateRule(const std::string& select, const std::string& text) {
  passes::Replacement r;
  r.select = sel(select);
  r.where = "test template";
  r.templ = passes::parseTemplate(text, "test template");
  return r;
}

std::unique_ptr<Model> runReplace(const onnx::ModelProto& proto, std::vector<passes::Replacement> rules,
                                  json* report = nullptr, bool allowNoMatch = false) {
  passes::ReplaceOptions o;
  o.replacements = std::move(rules);
  o.allowNoMatch = allowNoMatch;
  return runPass(proto, passes::createReplacePass(std::move(o)), report);
}

// The seed's case 3/4 rule set: Dropout -> Identity (its ratio input dropped),
// LayerNormalization -> a template carrying its scale and bias, Relu ->
// LeakyRelu(alpha 0), Softmax -> a template.
std::vector<passes::Replacement> seedRules() {
  std::vector<passes::Replacement> rules;
  auto dropout = opRule("op_type=Dropout", "Identity");
  dropout.inputs = std::vector<passes::ReplaceInput>{{passes::ReplaceInput::Kind::Index, 0, {}}};
  rules.push_back(std::move(dropout));
  rules.push_back(templateRule("op_type=LayerNormalization", kLayerNormTemplate));
  rules.push_back(opRule("op_type=Relu", "LeakyRelu", {{"alpha", 0}}));
  rules.push_back(templateRule("op_type=Softmax", kSoftmaxTemplate));
  return rules;
}

// Every initializer of every graph is read by something.
void checkNoDanglingInitializers(const onnx::GraphProto& g) {
  std::set<std::string> read;
  std::function<void(const onnx::GraphProto&)> collect = [&](const onnx::GraphProto& gp) {
    for (const auto& n : gp.node()) {
      for (const auto& in : n.input()) read.insert(in);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect(a.g());
        for (const auto& sub : a.graphs()) collect(sub);
      }
    }
    for (const auto& o : gp.output()) read.insert(o.name());
  };
  collect(g);
  for (const auto& t : g.initializer()) {
    INFO("initializer " << t.name());
    CHECK(read.count(t.name()) == 1);
  }
}

}  // namespace

TEST_CASE("seed case 3: Dropout, LayerNormalization, Relu, Softmax replaced on M1-M3", "[replace][seed]") {
  for (auto [name, proto] : {std::pair{"M1", seedM1()}, {"M2", seedM2()}, {"M3", seedM3()}}) {
    INFO(name);
    auto before = opCounts(proto);
    json report;
    auto model = runReplace(proto, seedRules(), &report, /*allowNoMatch=*/true);
    auto out = toProto(*model);
    auto after = opCounts(out);
    for (const char* gone : {"ai.onnx::Dropout", "ai.onnx::LayerNormalization", "ai.onnx::Relu", "ai.onnx::Softmax"})
      CHECK(after.count(gone) == 0);
    // Op replacements: one new op per old op, other ops unchanged.
    CHECK(after["ai.onnx::Identity"] == before["ai.onnx::Identity"] + before["ai.onnx::Dropout"]);
    CHECK(after["ai.onnx::LeakyRelu"] == before["ai.onnx::Relu"]);
    // Templates: their ops once per replaced node.
    CHECK(after["ai.onnx::ReduceMean"] == 2 * before["ai.onnx::LayerNormalization"]);
    CHECK(after["ai.onnx::ReduceSum"] == before["ai.onnx::Softmax"]);
    CHECK(after["ai.onnx::MatMul"] == before["ai.onnx::MatMul"]);
    CHECK(after["ai.onnx::Conv"] == before["ai.onnx::Conv"]);
    CHECK(after["ai.onnx::Transpose"] == before["ai.onnx::Transpose"]);
    // The dropout ratio was only the Dropout's: gone; the norm weights are used by the template.
    checkNoDanglingInitializers(out.graph());
    if (std::string(name) == "M2") {
      CHECK(report["initializers_removed"] == 1);
      CHECK(weightElements(out) == weightElements(proto) - 1);
    } else {
      CHECK(weightElements(out) == weightElements(proto));
    }
    if (std::string(name) == "M3") CHECK(report["changed"] == false);
    checkValid(*model);
    checkSameMaths(proto, *model, 1e-5);
  }
}

TEST_CASE("seed case 4: the same replacements inside M4's function body", "[replace][seed]") {
  auto proto = seedM4();
  auto model = runReplace(proto, seedRules());
  auto out = toProto(*model);
  REQUIRE(out.functions_size() == 1);
  std::map<std::string, size_t> body;
  for (const auto& n : out.functions(0).node()) body[n.op_type()]++;
  CHECK(body.count("Dropout") == 0);
  CHECK(body.count("LayerNormalization") == 0);
  CHECK(body["Identity"] == 2);
  CHECK(body["LeakyRelu"] == 2);
  CHECK(body["ReduceMean"] == 6);
  // Constant inputs inside a function body are Constant nodes, never initializers.
  checkNoDanglingInitializers(out.graph());
  checkValid(*model);
  checkSameMaths(proto, *model, 1e-5);
}

TEST_CASE("seed case 5 and 7: a whole custom block replaced by an implementation with another weight layout",
          "[replace][seed]") {
  // Dense layers as Gemm(transB = 1) on [out, in] weights; the Transposes of the
  // [in, out] weights are folded into new initializers.
  const char* gemmLayer = R"(
<domain: "t", opset_import: ["" : 17]>
CustomLayerGemm (x, w1, b1, r1, n1s, n1b, w2, b2, r2, n2s, n2b, w3, b3, n3s, n3b) => (y) {
  s1 = Constant <value_ints = [-1, 13]> ()
  x2 = Reshape (x, s1)
  w1t = Transpose <perm = [1, 0]> (w1)
  h1 = Gemm <transB = 1> (x2, w1t, b1)
  a1 = Relu (h1)
  o1 = Constant <value_ints = [32, 3, 8]> ()
  a1r = Reshape (a1, o1)
  l1 = LayerNormalization <axis = -1> (a1r, n1s, n1b)
  s2 = Constant <value_ints = [-1, 8]> ()
  l1f = Reshape (l1, s2)
  w2t = Transpose <perm = [1, 0]> (w2)
  h2 = Gemm <transB = 1> (l1f, w2t, b2)
  a2 = Relu (h2)
  o2 = Constant <value_ints = [32, 3, 24]> ()
  a2r = Reshape (a2, o2)
  l2 = LayerNormalization <axis = -1> (a2r, n2s, n2b)
  s3 = Constant <value_ints = [-1, 24]> ()
  l2f = Reshape (l2, s3)
  w3t = Transpose <perm = [1, 0]> (w3)
  h3 = Gemm <transB = 1> (l2f, w3t, b3)
  a3 = Softmax (h3)
  o3 = Constant <value_ints = [32, 3, 4]> ()
  a3r = Reshape (a3, o3)
  y = LayerNormalization <axis = -1> (a3r, n3s, n3b)
}
)";
  auto proto = seedM4();
  json report;
  auto model = runReplace(proto, {templateRule("op_type=CustomLayer", gemmLayer)}, &report);
  auto out = toProto(*model);
  // The block is gone, and its function and domain with it.
  CHECK(out.functions_size() == 0);
  for (const auto& op : out.opset_import()) CHECK(op.domain() != "custom");
  auto counts = opCounts(out);
  CHECK(counts["ai.onnx::Gemm"] == 3);
  CHECK(counts.count("ai.onnx::Transpose") == 0);  // folded: the weights are stored transposed
  CHECK(counts.count("ai.onnx::Dropout") == 0);
  CHECK(report["weights_folded"] == 3);
  // The [in, out] weights were replaced by [out, in] ones; the dropout ratios are gone.
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& t : out.graph().initializer()) dims[t.name()] = {t.dims().begin(), t.dims().end()};
  CHECK(dims.count("dense_1_weight") == 0);
  CHECK(dims.count("r1") == 0);
  CHECK(dims["custom_layer/w1t"] == std::vector<int64_t>{8, 13});
  CHECK(dims["custom_layer/w3t"] == std::vector<int64_t>{4, 24});
  CHECK(weightElements(out) == weightElements(proto) - 2);  // the dropout ratios
  checkNoDanglingInitializers(out.graph());
  checkValid(*model);
  checkSameMaths(proto, *model, 1e-5);
}

TEST_CASE("a weight shared by several matches is transformed once", "[replace][fold]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4,6] X1, float[4,6] X2) => (float[4,3] Y1, float[4,3] Y2) {
  Y1 = MatMul (X1, W)
  Y2 = MatMul (X2, W)
}
)");
  addWeight(proto, "W", {6, 3}, 7);
  const char* gemm = R"(
<domain: "t", opset_import: ["" : 17]>
AsGemm (a, b) => (y) {
  bt = Transpose <perm = [1, 0]> (b)
  y = Gemm <transB = 1> (a, bt)
}
)";
  json report;
  auto model = runReplace(proto, {templateRule("op_type=MatMul", gemm)}, &report);
  auto out = toProto(*model);
  REQUIRE(out.graph().initializer_size() == 1);
  CHECK(out.graph().initializer(0).dims(0) == 3);
  CHECK(report["initializers_created"] == 1);
  CHECK(report["initializers_removed"] == 1);
  CHECK(countOp(out, "Gemm") == 2);
  checkSameMaths(proto, *model);
}

TEST_CASE("folding covers the layout ops a template applies to weights", "[replace][fold]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2,12] X) => (float[2,12] Y) {
  Y = Add (X, B)
}
)");
  addWeight(proto, "B", {12}, 3);
  // Every foldable op on the weight, ending where it started; ORT checks the result.
  const char* shuffle = R"(
<domain: "t", opset_import: ["" : 17]>
Shuffle (x, b) => (y) {
  s = Constant <value_ints = [3, 4]> ()
  r = Reshape (b, s)
  t = Transpose <perm = [1, 0]> (r)
  tt = Transpose <perm = [1, 0]> (t)
  ax0 = Constant <value_ints = [0]> ()
  u = Unsqueeze (tt, ax0)
  q = Squeeze (u, ax0)
  sp = Constant <value_ints = [1, 2]> ()
  p1, p2 = Split <axis = 0> (q, sp)
  c = Concat <axis = 0> (p1, p2)
  st = Constant <value_ints = [0]> ()
  en = Constant <value_ints = [3]> ()
  sl = Slice (c, st, en)
  d = Cast <to = 11> (sl)
  twof = Constant <value_float = 2.0> ()
  two = Cast <to = 11> (twof)
  m = Mul (d, two)
  h = Div (m, two)
  n = Neg (h)
  nn = Neg (n)
  z = Sub (nn, nn)
  w = Add (nn, z)
  f = Cast <to = 1> (w)
  flat = Constant <value_ints = [12]> ()
  bf = Reshape (f, flat)
  id = Identity (bf)
  y = Add (x, id)
}
)";
  json report;
  auto model = runReplace(proto, {templateRule("op_type=Add", shuffle)}, &report);
  auto out = toProto(*model);
  CHECK(out.graph().node_size() == 1);  // only the Add on the activation is left
  CHECK(out.graph().node(0).op_type() == "Add");
  REQUIRE(out.graph().initializer_size() == 1);
  checkSameMaths(proto, *model);
  auto b = readTensor(*model->graph().initializers()[0].tensor);
  CHECK(b.dims == std::vector<int64_t>{12});
}

TEST_CASE("replacement in subgraphs, and op replacement carries attributes by the target's schema", "[replace]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool c, float[2,3] X) => (float[2,3] Y) {
  Y = If (c) <then_branch = g1 () => (float[2,3] t) {
      t = Softmax <axis = 1> (X)
    }, else_branch = g2 () => (float[2,3] e) {
      e = LogSoftmax <axis = 1> (X)
    }>
}
)");
  // LogSoftmax -> Softmax keeps axis (both take it); then Softmax -> Hardmax keeps axis too.
  json report;
  auto model =
      runReplace(proto, {opRule("op_type=LogSoftmax", "Softmax"), opRule("op_type=Softmax", "Hardmax")}, &report);
  auto out = toProto(*model);
  const auto& ifNode = out.graph().node(0);
  for (const auto& a : ifNode.attribute()) {
    REQUIRE(a.g().node_size() == 1);
    CHECK(a.g().node(0).op_type() == "Hardmax");
    REQUIRE(a.g().node(0).attribute_size() == 1);
    CHECK(a.g().node(0).attribute(0).i() == 1);
  }
  CHECK(report["replacements"][1]["matched"] == 2);
  checkValid(*model);
}

TEST_CASE("rename carries an attribute over under the target's name", "[replace]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4] X) => (float[4] Y) {
  Y = HardSigmoid <alpha = 0.5, beta = 0.25> (X)
}
)");
  proto.mutable_graph()->mutable_node(0)->set_name("hs");
  auto r = opRule("name=hs", "LeakyRelu");
  r.rename = {{"alpha", "unused"}, {"beta", "alpha"}};
  // alpha (0.5, not HardSigmoid's default 0.2) would be lost: the rule must drop it.
  CHECK_THROWS_WITH(runReplace(proto, {r}), Catch::Contains("attribute 'alpha' = 0.5 is not"));
  r.drop = {"alpha"};
  auto model = runReplace(proto, {r});
  auto out = toProto(*model);
  const auto& n = out.graph().node(0);
  CHECK(n.op_type() == "LeakyRelu");
  REQUIRE(n.attribute_size() == 1);
  CHECK(n.attribute(0).name() == "alpha");
  CHECK(n.attribute(0).f() == 0.25f);  // beta's value, not alpha's
  checkValid(*model);

  auto clash = opRule("name=hs", "LeakyRelu");
  clash.rename = {{"beta", "alpha"}};
  CHECK_THROWS_WITH(runReplace(proto, {clash}),
                    Catch::Contains("node 'hs'") && Catch::Contains("would both be named 'alpha'"));
}

TEST_CASE("replacing with ai.graphcore ops: registered schemas, PopART attribute types, opset import",
          "[replace][graphcore]") {
  auto proto = seedM2();
  std::vector<passes::Replacement> rules;
  rules.push_back(opRule("op_type=LayerNormalization", "ai.graphcore::GroupNormalization",
                         {{"num_groups", 1}, {"__schedule_priority", 1}}));
  auto dropout = opRule("op_type=Dropout", "ai.graphcore::ShapedDropout", {{"shape", {1, 32}}, {"ratio", 0.5}});
  dropout.inputs = std::vector<passes::ReplaceInput>{{passes::ReplaceInput::Kind::Index, 0, {}}};
  rules.push_back(std::move(dropout));
  rules.push_back(opRule("op_type=Relu", "ai.graphcore::Gelu"));
  rules.push_back(opRule(
      "op_type=MatMul", "MatMul",
      {{"__serialize_matmul_factor", 2}, {"__serialize_matmul_mode", "output_channels"}, {"__available_memory", 1}}));
  auto model = runReplace(proto, std::move(rules));
  auto out = toProto(*model);
  CHECK(model->opsetVersion("ai.graphcore") == 1);
  std::map<std::string, const onnx::NodeProto*> byOp;
  for (const auto& n : out.graph().node()) byOp[n.op_type()] = &n;
  REQUIRE(byOp.count("GroupNormalization"));
  const auto& gn = *byOp["GroupNormalization"];
  CHECK(gn.domain() == "ai.graphcore");
  CHECK(gn.output_size() == 3);  // PopART's schema has Mean and Var outputs: fresh, unused values
  std::map<std::string, onnx::AttributeProto> attrs;
  for (const auto& a : gn.attribute()) attrs[a.name()] = a;
  CHECK(attrs["epsilon"].type() == onnx::AttributeProto::FLOAT);  // carried from LayerNormalization
  CHECK(attrs["epsilon"].f() == Approx(0.001));
  CHECK(attrs["num_groups"].type() == onnx::AttributeProto::INT);
  CHECK(attrs["__schedule_priority"].type() == onnx::AttributeProto::FLOAT);  // 1 in JSON, FLOAT for PopART
  CHECK(attrs.count("axis") == 0);  // GroupNormalization has none
  const auto& mm = *byOp["MatMul"];
  for (const auto& a : mm.attribute()) {
    if (a.name() == "__serialize_matmul_factor") CHECK(a.type() == onnx::AttributeProto::INT);
    if (a.name() == "__available_memory") CHECK(a.type() == onnx::AttributeProto::FLOAT);
  }
  CHECK(byOp["ShapedDropout"]->attribute_size() == 2);
  // Every __ attribute has PopART's type; the checker accepts the model with graphrw's schemas.
  for (const auto& n : out.graph().node())
    for (const auto& a : n.attribute()) CHECK(popart::checkAttribute(a).empty());
  CHECK(validateModel(*model).empty());
}

TEST_CASE("bad replacements fail before anything is changed, naming the rule and the node", "[replace][errors]") {
  auto proto = seedM2();
  auto fails = [&](passes::Replacement r, const std::string& message, const std::string& node = "dropout") {
    INFO(message);
    CHECK_THROWS_WITH(runReplace(proto, {std::move(r)}),
                      Catch::Contains(message) && Catch::Contains("node '" + node + "'") && Catch::Contains("test "));
  };
  fails(opRule("name=dropout", "NoSuchOp"), "unknown target op ai.onnx::NoSuchOp");
  fails(opRule("name=dropout", "custom::Thing"), "--allow-unknown-op");
  fails(opRule("name=dense_1/Relu", "LeakyRelu", {{"alpah", 0.1}}), "has no attribute 'alpah' (did you mean 'alpha'?)",
        "dense_1/Relu");
  fails(opRule("name=dense_1/Relu", "ai.graphcore::Scale"), "requires attribute 'scale'", "dense_1/Relu");
  fails(opRule("name=dense_1/Relu", "ai.graphcore::Scale", {{"scale", "big"}}), "cannot be written as FLOAT",
        "dense_1/Relu");
  fails(opRule("name=dense_1/Relu", "Identity", {{"__ipu_number", -1}}), "__ipu_number", "dense_1/Relu");
  fails(opRule("name=dropout", "Identity"), "Identity takes 1 inputs, the node would give it 2");
  fails(templateRule(
            "name=dropout",
            "<domain: \"t\", opset_import: [\"\" : 17]>\nOne () => (y) {\n  y = Constant <value_float = 1.0> ()\n}\n"),
        "template One takes 0 inputs and 1 outputs, the node has 2 inputs and 1 outputs");
  fails(opRule("name=dropout", "ai.onnx::Identity:13"), "the node's scope imports version 17");

  SECTION("an unknown op is written as given when allowed") {
    passes::ReplaceOptions o;
    o.replacements.push_back(opRule("name=dropout", "custom::Thing", {{"k", 3}}));
    o.allowUnknownOp = true;
    auto model = runPass(proto, passes::createReplacePass(std::move(o)));
    auto out = toProto(*model);
    CHECK(model->opsetVersion("custom") == 1);
  }
  SECTION("a selector matching nothing") {
    CHECK_THROWS_WITH(runReplace(proto, {opRule("op_type=Gelu", "Relu")}), Catch::Contains("matched no node"));
  }
  SECTION("templates that do not parse or whose references have no type") {
    CHECK_THROWS_WITH(passes::parseTemplate("Broken (x) => (y) {", "t.onnxtxt"),
                      Catch::Contains("t.onnxtxt: the template does not parse"));
    CHECK_THROWS_WITH(
        passes::parseTemplate("<opset_import: [\"\" : 17]>\nF <a> (x) => (y) {\n  y = Relu <alpha = @a> (x)\n}\n", "t"),
        Catch::Contains("attribute 'alpha' = @a"));
  }
}

TEST_CASE("replace through a rule file: targets, set, rename, inputs with constants, outputs", "[replace][rules]") {
  auto proto = seedM2();
  std::string text = R"({"version": 1, "passes": [{"pass": "replace", "replacements": [
    {"select": {"op_type": "Dropout"}, "with": "Mul", "inputs": [0, {"constant": 1.0}]},
    {"select": {"op_type": "LayerNormalization"}, "with": "LayerNormalization", "rename": {"epsilon": "epsilon"},
        "set": {"axis": -1}}
  ]}]})";
  auto rules = parseRules(text, "r.json");
  auto model = loadModel(proto);
  PassManager pm({true, std::nullopt, ""});
  for (auto& p : rules.passes) pm.add(std::move(p));
  auto report = pm.run(*model);
  auto out = toProto(*model);
  CHECK(countOp(out, "Mul") == 1);
  bool found = false;
  for (const auto& t : out.graph().initializer())
    if (t.name() == "dropout/input_1") {
      found = true;
      CHECK(t.data_type() == onnx::TensorProto::FLOAT);
      CHECK(t.dims_size() == 0);
    }
  CHECK(found);
  checkSameMaths(proto, *model);

  CHECK_THROWS_WITH(parseRules(R"({"version": 1, "passes": [{"pass": "replace", "replacements": [
    {"select": {"op_type": "Dropout"}, "with": "Identity", "template": "x"}]}]})",
                               "r.json"),
                    Catch::Contains("/passes/0/replacements/0"));
  CHECK_THROWS_WITH(parseRules(R"({"version": 1, "passes": [{"pass": "replace", "replacements": [
    {"select": {"op_type": "Dropout"}, "template": "F (x) => (y) { y = Relu (x) }", "set": {"a": 1}}]}]})",
                               "r.json"),
                    Catch::Contains("only an op replacement (with) takes set"));
}

namespace {

// A training export's Dropout: ratio and training_mode from Constant nodes,
// the mask a second output nothing reads; once in the main graph, once in a
// local function's body.
const char* kTrainingDropout = R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[2, 8] x) => (float[2, 8] y) {
  ratio = Constant <value = float {0.1}> ()
  mode = Constant <value = bool {1}> ()
  d, mask = Dropout <seed = 7> (x, ratio, mode)
  r = Relu (d)
  y = local.Block (r)
}
<domain: "local", opset_import: ["" : 17]>
Block (a) => (b) {
  p = Constant <value = float {0.2}> ()
  t = Constant <value = bool {1}> ()
  c, m = Dropout (a, p, t)
  b = Relu (c)
}
)";

size_t countOpEverywhere(const onnx::ModelProto& m, const std::string& op) {
  size_t n = countOp(m, op);
  for (const auto& f : m.functions())
    for (const auto& node : f.node()) n += node.op_type() == op;
  return n;
}

}  // namespace

TEST_CASE("replace removes what its edits leave dead, in the main graph and in function bodies", "[replace]") {
  auto proto = parseModel(kTrainingDropout);
  auto dropout = opRule("op_type=Dropout", "Identity");
  dropout.inputs = std::vector<passes::ReplaceInput>{{passes::ReplaceInput::Kind::Index, 0, {}}};
  CHECK_THROWS_WITH(runReplace(proto, {dropout}), Catch::Contains("attribute 'seed' = 7 is not"));
  dropout.drop = {"seed"};  // seed has no default: dropping it is the rule's decision
  json report;
  auto model = runReplace(proto, {dropout}, &report);
  auto out = toProto(*model);
  CHECK(countOpEverywhere(out, "Dropout") == 0);
  CHECK(countOpEverywhere(out, "Identity") == 2);
  // The ratio and training_mode Constants went with the inputs that read them.
  CHECK(countOpEverywhere(out, "Constant") == 0);
  CHECK(report["dead_nodes_removed"] == 4);
  // The unread mask output was mapped away without an outputs list.
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Identity") CHECK(n.output_size() == 1);
  for (const auto& n : out.functions(0).node())
    if (n.op_type() == "Identity") CHECK(n.output_size() == 1);
  checkValid(*model);

  SECTION("a Constant something else still reads stays") {
    auto shared = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 8] x) => (float[2, 8] y, float z) {
  ratio = Constant <value = float {0.1}> ()
  d = Dropout (x, ratio)
  y = Relu (d)
  z = Identity (ratio)
}
)");
    auto m = runReplace(shared, {dropout});
    CHECK(countOp(toProto(*m), "Constant") == 1);
  }
  SECTION("a mask that is read cannot go") {
    auto read = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 8] x) => (float[2, 8] y, bool[2, 8] keep) {
  d, mask = Dropout (x)
  y = Relu (d)
  keep = Not (mask)
}
)");
    CHECK_THROWS_WITH(runReplace(read, {opRule("op_type=Dropout", "Identity")}),
                      Catch::Contains("output 1 ('mask') is read but ai.onnx::Identity has 1 output"));
  }
}

TEST_CASE("replace refuses to drop an attribute whose value is not the default, unless the rule drops it",
          "[replace][errors]") {
  // LayerNormalization over axis 1 of a 3-D input: a replacement without
  // `axis` would normalise over the last axis only.
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x, float[3, 4] s) => (float[2, 3, 4] y, float[2, 3, 4] z) {
  y = LayerNormalization <axis = 1, epsilon = 0.001> (x, s)
  z = LayerNormalization <axis = -1, epsilon = 0.00001> (x, s)
}
)";
  auto proto = parseModel(text);
  passes::ReplaceOptions o;
  o.replacements.push_back(opRule("op_type=LayerNormalization", "test.graphrw::MyNorm"));
  o.allowUnknownOp = true;  // an unknown op takes any attribute: nothing is dropped
  CHECK_NOTHROW(runPass(proto, passes::createReplacePass(o)));

  // ai.graphcore::Scale takes only `scale`: axis and epsilon would be dropped.
  auto scale = opRule("op_type=LayerNormalization", "ai.graphcore::Scale", {{"scale", 1.0}});
  scale.inputs = std::vector<passes::ReplaceInput>{{passes::ReplaceInput::Kind::Index, 0, {}}};
  auto loaded = loadModel(proto);
  std::string before = serialize(*loaded);
  {
    passes::ReplaceOptions bad;
    bad.replacements.push_back(scale);
    PassManager pm({true, std::nullopt, ""});
    pm.add(passes::createReplacePass(std::move(bad)));
    CHECK_THROWS_WITH(pm.run(*loaded),
                      Catch::Contains("attribute 'axis' = 1 is not ai.onnx::LayerNormalization's default") &&
                          Catch::Contains("drop: [\"axis\"] / --drop axis"));
  }
  CHECK(serialize(*loaded) == before);  // nothing was changed

  // Dropping axis as the rule says: epsilon 0.001 is not the default either.
  scale.drop = {"axis"};
  CHECK_THROWS_WITH(runReplace(proto, {scale}), Catch::Contains("attribute 'epsilon' = 0.001"));
  scale.drop = {"axis", "epsilon"};
  auto model = runReplace(proto, {scale});
  CHECK(countOp(toProto(*model), "Scale") == 2);

  // Only the default-valued node: its attributes go without a word.
  auto onlyDefault = scale;
  onlyDefault.drop.clear();
  auto m2 = runReplace(parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 3, 4] x, float[3, 4] s) => (float[2, 3, 4] z) {
  z = LayerNormalization <axis = -1, epsilon = 0.00001> (x, s)
}
)"),
                       {onlyDefault});
  auto out = toProto(*m2);
  CHECK(countOp(out, "Scale") == 1);
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Scale") CHECK(n.attribute_size() == 1);

  SECTION("from the command line with --drop") {
    test::TempDir dir;
    writeProto(proto, dir / "m.onnx");
    std::string base =
        test::graphrwBin() + " replace " + (dir / "m.onnx").string() +
        " --select op_type=LayerNormalization --with ai.graphcore::Scale --set scale=1.0 --inputs '[0]' -o " +
        (dir / "out.onnx").string();
    auto refused = test::run(base);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("--drop axis"));
    CHECK_FALSE(std::filesystem::exists(dir / "out.onnx"));
    auto ok = test::run(base + " --drop axis --drop epsilon");
    CHECK(ok.status == 0);
    CHECK(countOp(readProto(dir / "out.onnx"), "Scale") == 2);
  }
}

TEST_CASE("rule file: rename carries a value under a new name, outputs maps, fold false keeps template ops",
          "[replace][rules]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4,6] X) => (float[4,6] H, float[4,3] Y) {
  H = HardSigmoid <alpha = 0.5, beta = 0.25> (X)
  D, mask = Dropout (H)
  Y = MatMul (D, W)
}
)");
  addWeight(proto, "W", {6, 3}, 5);
  auto run = [&](const std::string& text) {
    auto rules = parseRules(text, "r.json");
    auto model = loadModel(proto);
    PassManager pm({true, std::nullopt, ""});
    for (auto& p : rules.passes) pm.add(std::move(p));
    auto report = pm.run(*model);
    return std::make_pair(std::move(model), report);
  };
  // HardSigmoid's beta becomes LeakyRelu's alpha; its own alpha is dropped as
  // the rule says. The Dropout keeps only its first output.
  auto [model, report] = run(R"({"version": 1, "passes": [{"pass": "replace", "replacements": [
    {"select": {"op_type": "HardSigmoid"}, "with": "LeakyRelu", "rename": {"beta": "alpha"}, "drop": ["alpha"]},
    {"select": {"op_type": "Dropout"}, "with": "Identity", "outputs": [0]}
  ]}]})");
  auto out = toProto(*model);
  const onnx::NodeProto* leaky = nullptr;
  for (const auto& n : out.graph().node())
    if (n.op_type() == "LeakyRelu") leaky = &n;
  REQUIRE(leaky);
  REQUIRE(leaky->attribute_size() == 1);
  CHECK(leaky->attribute(0).name() == "alpha");
  CHECK(leaky->attribute(0).f() == 0.25f);  // beta's value
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Identity") {
      CHECK(n.output_size() == 1);
      CHECK(n.output(0) == "D");
    }
  CHECK(countOp(out, "Dropout") == 0);

  // A template on the weight: folded by default, kept as ops with fold false.
  const std::string templ = R"(<domain: \"t\", opset_import: [\"\" : 17]>\nAsGemm (a, b) => (y) {\n)"
                            R"(  bt = Transpose <perm = [1, 0]> (b)\n  y = Gemm <transB = 1> (a, bt)\n})";
  auto [folded, r1] = run(R"({"version": 1, "passes": [{"pass": "replace", "replacements": [
    {"select": {"op_type": "MatMul"}, "template": ")" +
                          templ + R"("}]}]})");
  CHECK(countOp(toProto(*folded), "Transpose") == 0);
  CHECK(r1[0]["weights_folded"] == 1);
  auto [kept, r2] = run(R"({"version": 1, "passes": [{"pass": "replace", "fold": false, "replacements": [
    {"select": {"op_type": "MatMul"}, "template": ")" +
                        templ + R"("}]}]})");
  CHECK(countOp(toProto(*kept), "Transpose") == 1);
  CHECK(r2[0]["weights_folded"] == 0);
  checkSameMaths(proto, *folded);
  checkSameMaths(proto, *kept);
}
