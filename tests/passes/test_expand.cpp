#include <catch2/catch.hpp>

#include "driver/pass_manager.h"
#include "driver/validate.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ort.h"
#include "passes/expand/expand.h"
#include "seed_models.h"
#include "support.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;

namespace {

std::unique_ptr<Model> runExpand(const onnx::ModelProto& proto, passes::ExpandOptions options = {},
                                 nlohmann::json* report = nullptr) {
  return runPass(proto, passes::createExpandPass(std::move(options)), report);
}

}  // namespace

TEST_CASE("expand binds formals, keeps missing optionals missing, names omitted outputs", "[expand]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[4] X, float[4] M) => (float[4] Y) {
  Y = f.Two (X, M)
}
<domain: "f", opset_import: ["" : 17]>
Two (a, lo) => (y, z) {
  y = Clip (a, lo)
  z = Neg (a)
}
)");
  proto.mutable_graph()->mutable_node(0)->set_input(1, "");  // the optional `lo` is missing
  proto.mutable_graph()->mutable_node(0)->set_name("call");
  proto.mutable_graph()->mutable_input()->RemoveLast();
  auto model = runExpand(proto);
  Graph& g = model->graph();
  REQUIRE(g.nodeCount() == 2);
  Node* clip = byName(g, "call/Clip");
  REQUIRE(clip);
  CHECK(clip->input(0) == g.findLocal("X"));
  CHECK(clip->inputs().size() == 2);
  CHECK(clip->input(1) == nullptr);
  CHECK(clip->output(0) == g.findLocal("Y"));  // the call's output keeps its name
  Node* neg = byName(g, "call/Neg");
  REQUIRE(neg);
  CHECK(neg->output(0)->name() == "call/z");  // omitted by the call: a fresh name
  CHECK(model->functions().empty());
  checkValid(*model);
}

TEST_CASE("expand resolves attribute references: call, function default, else dropped", "[expand]") {
  auto proto = test::parseModel(R"(
<ir_version: 9, opset_import: ["" : 17, "f" : 1]>
main (float[4] X) => (float[4] Y) {
  Y = f.Acts <alpha = 0.2> (X)
}
<domain: "f", opset_import: ["" : 17]>
Acts <alpha, gamma> (x) => (y) {
  a = LeakyRelu <alpha: float = @alpha> (x)
  b = Elu <alpha: float = @beta> (a)
  y = Selu <alpha: float = @gamma> (b)
}
)");
  // FunctionProto.attribute_proto (ONNX >= 1.13): beta defaults to 0.7.
  onnx::AttributeProto beta;
  beta.set_name("beta");
  beta.set_type(onnx::AttributeProto::FLOAT);
  beta.set_f(0.7f);
  proto.mutable_functions(0)->mutable_unknown_fields()->AddLengthDelimited(11, beta.SerializeAsString());
  proto.mutable_graph()->mutable_node(0)->set_name("acts");
  auto model = runExpand(proto);
  Graph& g = model->graph();
  Node* leaky = byName(g, "acts/LeakyRelu");
  Node* elu = byName(g, "acts/Elu");
  Node* selu = byName(g, "acts/Selu");
  REQUIRE((leaky && elu && selu));
  REQUIRE(leaky->attribute("alpha"));
  CHECK(leaky->attribute("alpha")->proto().f() == 0.2f);
  CHECK_FALSE(leaky->attribute("alpha")->isRef());
  REQUIRE(elu->attribute("alpha"));
  CHECK(elu->attribute("alpha")->proto().f() == 0.7f);  // ONNX's own inliner drops this one
  CHECK(selu->attribute("alpha") == nullptr);  // neither set nor defaulted: schema default
  checkSameMaths(proto, *model);
}

TEST_CASE("expand inlines nested calls, calls in subgraphs and in kept functions", "[expand]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (bool C, float[4] X) => (float[4] Y, float[4] Z, float[4] K) {
  Y = f.Outer (X)
  Z = If (C) <then_branch = g1 () => (float[4] t) { t = f.Inner (X) },
      else_branch = g2 () => (float[4] e) { e = Neg (X) }>
  K = f.Kept (X)
}
<domain: "f", opset_import: ["" : 17, "f" : 1]>
Outer (x) => (y) {
  a = f.Inner (x)
  y = f.Inner (a)
}
<domain: "f", opset_import: ["" : 17]>
Inner (x) => (y) {
  t = Abs (x)
  y = Sqrt (t)
}
<domain: "f", opset_import: ["" : 17, "f" : 1]>
Kept (x) => (y) {
  y = f.Inner (x)
}
)");
  passes::ExpandOptions options;
  options.exclude = sel("op_type=Kept");
  nlohmann::json report;
  auto model = runExpand(proto, options, &report);
  // Only Kept is still called; its body's call was inlined.
  REQUIRE(model->functions().size() == 1);
  Function* kept = model->findFunction("f", "Kept");
  REQUIRE(kept);
  for (const auto& n : kept->body().nodes()) CHECK(n->domain() != "f");
  // No call left in the main graph or the If branch.
  model->graph().walkGraphs([](Graph& g) {
    for (const auto& n : g.nodes()) CHECK((n->domain() != "f" || n->opType() == "Kept"));
  });
  CHECK(report["functions_removed"].size() == 2);
  checkSameMaths(proto, *model);
}

TEST_CASE("a call cycle is an error naming the cycle", "[expand][errors]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[4] X) => (float[4] Y) {
  Y = f.A (X)
}
<domain: "f", opset_import: ["" : 17, "f" : 1]>
A (x) => (y) {
  y = f.B (x)
}
<domain: "f", opset_import: ["" : 17, "f" : 1]>
B (x) => (y) {
  y = f.A (x)
}
)");
  try {
    runExpand(proto);
    FAIL("expanded");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::BadInput);
    CHECK_THAT(e.what(), Catch::Contains("call cycle") && Catch::Contains("f::A") && Catch::Contains("f::B"));
  }
}

TEST_CASE("expand merges opset imports", "[expand][opset]") {
  SECTION("a domain used only inside the function joins the model") {
    auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[4] X) => (float[4] Y) {
  Y = f.F (X)
}
<domain: "f", opset_import: ["" : 17, "ai.onnx.ml" : 3]>
F (x) => (y) {
  y = ai.onnx.ml.Normalizer <norm = "MAX"> (x)
}
)");
    auto model = runExpand(proto);
    CHECK(model->opsetVersion("ai.onnx.ml") == 3);
  }
  SECTION("another ai.onnx version is fine when the ops used are the same in both") {
    auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[4] X) => (float[4] Y) {
  Y = f.F (X)
}
<domain: "f", opset_import: ["" : 14]>
F (x) => (y) {
  y = Relu (x)
}
)");
    auto model = runExpand(proto);
    CHECK(model->opsetVersion("") == 17);
  }
  auto reduce = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13, "f" : 1]>
main (float[2,3] X) => (float[2,1] Y) {
  Y = f.F (X)
}
<domain: "f", opset_import: ["" : 12]>
F (x) => (y) {
  y = ReduceSum <axes = [1]> (x)
}
)");
  SECTION("ops that differ between the versions are an error naming both") {
    try {
      runExpand(reduce);
      FAIL("expanded");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("ai.onnx 12") && Catch::Contains("ai.onnx 13") &&
                               Catch::Contains("ReduceSum") && Catch::Contains("--convert-opset"));
    }
  }
  SECTION("--convert-opset converts the body with ONNX's version converter") {
    passes::ExpandOptions options;
    options.convertOpset = true;
    auto model = runExpand(reduce, options);
    Node* rs = model->graph().nodes().back().get();
    CHECK(rs->opType() == "ReduceSum");
    CHECK(rs->inputs().size() == 2);  // axes became an input at opset 13
    checkValid(*model);
    // ORT reads the function at the model's opset, so the reference is the same maths written at 13.
    auto reference = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
main (float[2,3] X) => (float[2,1] Y) {
  axes = Constant <value = int64[1] {1}> ()
  Y = ReduceSum (X, axes)
}
)");
    checkSameMaths(reference, *model);
  }
  SECTION("--convert-opset goes down through graphrw's adapters (ONNX's converter crashes on Split-13 without split)") {
    auto split = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 11, "f" : 1]>
main (float[4,2] X) => (float[4,2] Y) {
  Y = f.Swap (X)
}
<domain: "f", opset_import: ["" : 14]>
Swap (x) => (y) {
  a, b = Split <axis = 0> (x)
  y = Concat <axis = 0> (b, a)
}
)");
    passes::ExpandOptions options;
    options.convertOpset = true;
    auto model = runExpand(split, options);
    REQUIRE(model->graph().nodes().size() == 2);
    CHECK(model->graph().nodes().front()->inputs().size() == 1);  // Split-11: one input
    checkValid(*model);
    auto reference = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 11]>
main (float[4,2] X) => (float[4,2] Y) {
  a, b = Split <axis = 0> (X)
  Y = Concat <axis = 0> (b, a)
}
)");
    checkSameMaths(reference, *model);
  }
}

TEST_CASE("expand carries the function's value_info, renamed", "[expand]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[4] X) => (float[4] Y) {
  Y = f.F (X)
}
<domain: "f", opset_import: ["" : 17]>
F (x) => (y) {
  t = Abs (x)
  y = Neg (t)
}
)");
  proto.mutable_graph()->mutable_node(0)->set_name("c");
  onnx::ValueInfoProto vi;
  vi.set_name("t");
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(1);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  proto.mutable_functions(0)->mutable_unknown_fields()->AddLengthDelimited(12, vi.SerializeAsString());
  auto model = runExpand(proto);
  const auto& infos = model->graph().valueInfo();
  REQUIRE(infos.size() == 1);
  CHECK(infos[0].value->name() == "c/t");
  CHECK(infos[0].value->type()->tensor_type().shape().dim(0).dim_value() == 4);
  auto written = toProto(*model);
  CHECK(written.graph().value_info(0).name() == "c/t");
}

TEST_CASE("expand inlines ai.graphcore::Call callees with outer-scope references", "[expand]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "ai.graphcore" : 1]>
main (float[4] X, float[4] W) => (float[4] Y) {
  Y = ai.graphcore.Call <callee = body (float[4] a) => (float[4] b) { t = Add (a, W)
    b = Relu (t) }> (X)
}
)");
  proto.mutable_graph()->mutable_node(0)->set_name("layer");
  auto model = runExpand(proto);
  Graph& g = model->graph();
  CHECK(nodeNames(g) == std::vector<std::string>{"layer/Add", "layer/Relu"});
  Node* add = byName(g, "layer/Add");
  CHECK(add->input(0) == g.findLocal("X"));
  CHECK(add->input(1) == g.findLocal("W"));
  CHECK(byName(g, "layer/Relu")->output(0) == g.findLocal("Y"));
  CHECK(g.findLocal("W")->uses().size() == 1);  // the callee's use went with it

  auto reference = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4] X, float[4] W) => (float[4] Y) {
  t = Add (X, W)
  Y = Relu (t)
}
)");
  checkSameMaths(reference, *model);
}

TEST_CASE("inlined names are readable and unique across the model", "[expand][names]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[4] X) => (float[4] Y) {
  ct = Abs (X)
  A = f.F (ct)
  Y = f.F (A)
}
<domain: "f", opset_import: ["" : 17]>
F (x) => (y) {
  t = Neg (x)
  y = Relu (t)
}
)");
  // Both calls are named "c"; the body's Relu has no name; "c/t" is taken already.
  proto.mutable_graph()->mutable_node(0)->set_output(0, "c/t");
  proto.mutable_graph()->mutable_node(1)->set_input(0, "c/t");
  proto.mutable_graph()->mutable_node(1)->set_name("c");
  proto.mutable_graph()->mutable_node(2)->set_name("c");
  proto.mutable_functions(0)->mutable_node(0)->set_name("neg");
  auto model = runExpand(proto);
  Graph& g = model->graph();
  CHECK(nodeNames(g) == std::vector<std::string>{"", "c/neg", "c/Relu", "c/neg_1", "c/Relu_1"});
  std::set<std::string> values;
  for (const auto& v : g.values()) CHECK(values.insert(v->name().str()).second);
  CHECK(g.findLocal("c/t_1"));
  CHECK(g.findLocal("Y")->producer()->name() == "c/Relu_1");
  CHECK(g.inputs()[0].value->name() == "X");
}

TEST_CASE("seed case 1: expand CustomLayer by class in M4", "[expand][seed]") {
  auto m4 = test::seedM4();
  passes::ExpandOptions options;
  options.select = sel("op_type=CustomLayer");
  auto model = runExpand(m4, options);
  auto after = toProto(*model);
  CHECK(after.functions_size() == 0);
  for (const auto& n : after.graph().node()) CHECK(n.domain() != "custom");
  CHECK(test::weightElements(after) == test::weightElements(m4));
  // The seed's layer order, under the call's name.
  std::vector<std::string> layers;
  for (const auto& n : after.graph().node()) {
    std::string layer = n.name().substr(0, n.name().find('/', std::string("custom_layer/").size()));
    if (layers.empty() || layers.back() != layer) layers.push_back(layer);
  }
  CHECK(layers == std::vector<std::string>{"custom_layer/dense_1", "custom_layer/dropout_1", "custom_layer/norm_1",
                                           "custom_layer/dense_2", "custom_layer/dropout_2", "custom_layer/norm_2",
                                           "custom_layer/dense_3", "custom_layer/norm_3"});
  CHECK(after.graph().output(0).name() == "output");
  checkValid(*model);
  checkSameMaths(m4, *model);
}

TEST_CASE("seed case 2: expanding a class the model does not have changes nothing", "[expand][seed]") {
  auto m5 = test::seedM5();
  passes::ExpandOptions options;
  options.select = sel("op_type=CustomLayer");
  // An explicit selector that matches nothing is an error unless allowed (one policy for every pass).
  CHECK_THROWS_WITH(runExpand(m5, options), Catch::Contains("matched no call") && Catch::Contains("allow_no_match"));
  options.allowNoMatch = true;
  nlohmann::json report;
  auto model = runExpand(m5, options, &report);
  CHECK(nodeNames(model->graph()) == std::vector<std::string>{"custom_1", "custom_2", "add", "out_1", "out_2"});
  CHECK(report["changed"] == false);
  CHECK(report["matched"] == 0);
  CHECK(serialize(*model) == m5.SerializeAsString());
}

TEST_CASE("the BERT-style bench model, functions nested two deep, expands fully", "[expand][bert]") {
  test::TempDir dir;
  auto gen = test::run(std::string(GRAPHRW_GEN_BERT) + " -o '" + (dir / "bert.onnx").string() + "' --layers 2");
  REQUIRE(gen.status == 0);
  auto proto = test::readProto(dir / "bert.onnx");
  REQUIRE(proto.functions_size() == 3);
  auto model = runExpand(proto);
  CHECK(model->functions().empty());
  for (const auto& n : model->graph().nodes()) CHECK(n->domain().empty());
  // The functions' domain is no longer imported; ai.onnx is.
  CHECK(model->opsetImports() == std::map<std::string, int64_t>{{"", 17}});
  checkValid(*model);
  checkSameMaths(proto, *model, 1e-5, 2);
}

TEST_CASE("schema-ops expands function-bodied standard ops, context-dependent ones too", "[expand][schema]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2,3,4] X, float[4] S, float[4] B) => (float[2,3,4] Y, float[2,3,4] Z, float[2,3,4] C) {
  Y = LayerNormalization <axis = -1> (X, S, B)
  Z = Softmax <axis = 1> (X)
  C = Celu (X)
}
)");
  SECTION("all") {
    passes::ExpandOptions options;
    options.schemaAll = true;
    nlohmann::json report;
    auto model = runExpand(proto, options, &report);
    for (const auto& n : model->graph().nodes())
      CHECK((n->opType() != "LayerNormalization" && n->opType() != "Softmax" && n->opType() != "Celu"));
    CHECK(report["schema_ops_expanded"]["LayerNormalization"] == 1);
    checkValid(*model);
    checkSameMaths(proto, *model, 1e-5);
  }
  SECTION("a list") {
    passes::ExpandOptions options;
    options.schemaOps = {"Celu"};
    auto model = runExpand(proto, options);
    auto after = toProto(*model);
    CHECK(countOp(after, "LayerNormalization") == 1);
    CHECK(countOp(after, "Celu") == 0);
    checkSameMaths(proto, *model, 1e-5);
  }
}

TEST_CASE("a call to something unknown is left alone", "[expand]") {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "vendor" : 1]>
main (float[4] X) => (float[4] Y) {
  Y = vendor.Mystery (X)
}
)");
  passes::ExpandOptions options;
  options.schemaAll = true;
  auto model = runExpand(proto, options);
  CHECK(serialize(*model) == proto.SerializeAsString());
}
