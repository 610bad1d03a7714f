#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/expand/expand.h"
#include "passes/popart/outline/outline.h"
#include "seed_models.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;
using nlohmann::json;

namespace {

passes::OutlineOptions outlineOf(std::vector<std::string> selectors,
                                 passes::OutlineOptions::Mode mode = passes::OutlineOptions::Mode::Call) {
  passes::OutlineOptions o;
  for (const auto& s : selectors) o.select.any.push_back(Selector::parse(s));
  o.mode = mode;
  return o;
}

std::unique_ptr<Model> runOutline(const onnx::ModelProto& proto, passes::OutlineOptions o, json* report = nullptr) {
  return runPass(proto, passes::createOutlinePass(std::move(o)), report);
}

// Expands the outlined model back (ai.graphcore::Call callees, local functions).
onnx::ModelProto expanded(Model& m) {
  auto back = runPass(toProto(m), passes::createExpandPass({}));
  return toProto(*back);
}

// The Call nodes of a node list: callee name -> serialized body, and how many calls each.
struct Calls {
  std::map<std::string, std::set<std::string>> bodies;
  std::map<std::string, size_t> count;
};
Calls callsIn(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
  Calls c;
  for (const auto& n : nodes)
    if (n.op_type() == "Call" && n.domain() == "ai.graphcore") {
      REQUIRE(n.attribute_size() >= 1);
      const auto& g = n.attribute(0).g();
      c.bodies[g.name()].insert(g.SerializeAsString());
      c.count[g.name()]++;
    }
  return c;
}

const char* kDenseBlock = "scope=dense_*,name_regex=.*/(MatMul|Add)";

// Three identical dense layers (32 -> 32, relu) and a different head (32 -> 6).
onnx::ModelProto repeatedDense() {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\nrep (float[32,4,32] x) => (float[32,4,6] y) {\n";
  std::string in = "x";
  for (int i = 1; i <= 4; ++i) {
    std::string l = "dense_" + std::to_string(i);
    text += "  " + l + "_mm = MatMul (" + in + ", " + l + "_w)\n  " + l + "_add = Add (" + l + "_mm, " + l + "_b)\n";
    std::string out = i == 4 ? "y" : l + "_out";
    text += "  " + out + " = " + (i == 4 ? "Softmax" : "Relu") + " (" + l + "_add)\n";
    in = out;
  }
  text += "}\n";
  auto m = parseModel(text);
  const char* ops[] = {"MatMul", "Add", "Act"};
  for (int i = 0; i < m.graph().node_size(); ++i)
    m.mutable_graph()->mutable_node(i)->set_name("dense_" + std::to_string(i / 3 + 1) + "/" + ops[i % 3]);
  for (int i = 1; i <= 4; ++i) {
    addWeight(m, "dense_" + std::to_string(i) + "_w", {32, i == 4 ? 6 : 32}, static_cast<uint32_t>(40 + i));
    addWeight(m, "dense_" + std::to_string(i) + "_b", {i == 4 ? 6 : 32}, static_cast<uint32_t>(50 + i));
  }
  return m;
}

}  // namespace

TEST_CASE("seed case 8: Dense-like blocks and Dropouts behind Calls, expanding again gives the same outputs",
          "[outline][seed]") {
  for (auto [name, proto] : {std::pair{"M1", seedM1()}, {"M2", seedM2()}, {"M4", seedM4()}}) {
    INFO(name);
    json report;
    auto options = outlineOf({kDenseBlock, "op_type=Dropout"});
    options.allowNoMatch = true;  // M1 has no Dropout
    auto model = runOutline(proto, options, &report);
    auto out = toProto(*model);
    // Every selected block sits behind a Call; no MatMul, Add or Dropout is left outside a callee.
    const auto& nodes = std::string(name) == "M4" ? out.functions(0).node() : out.graph().node();
    for (const auto& n : nodes) {
      CHECK(n.op_type() != "MatMul");
      CHECK(n.op_type() != "Dropout");
    }
    auto calls = callsIn(nodes);
    size_t expected = std::string(name) == "M1" ? 2 : std::string(name) == "M2" ? 2 : 5;
    size_t total = 0;
    for (const auto& [callee, n] : calls.count) total += n;
    CHECK(total == expected);
    CHECK(report["blocks"] == expected);
    // These blocks all differ (sizes, activations): none shares a body or a name.
    for (const auto& [callee, bodies] : calls.bodies) CHECK(bodies.size() == 1);
    CHECK(report["distinct_bodies"] == expected);
    checkValid(*model);
    checkSameMaths(proto, expanded(*model), 1e-5);

    auto fOptions = outlineOf({kDenseBlock, "op_type=Dropout"}, passes::OutlineOptions::Mode::Function);
    fOptions.allowNoMatch = true;
    auto fmodel = runOutline(proto, fOptions, &report);
    CHECK(report["blocks"] == expected);
    checkValid(*fmodel);
    checkSameMaths(proto, *fmodel, 1e-5);
  }
}

TEST_CASE("identical blocks share one callee name and body, different ones never do", "[outline]") {
  auto proto = repeatedDense();
  json report;
  auto model = runOutline(proto, outlineOf({kDenseBlock}), &report);
  auto out = toProto(*model);
  auto calls = callsIn(out.graph().node());
  REQUIRE(calls.count.size() == 2);
  CHECK(calls.count["dense"] == 3);  // the three 32 -> 32 layers
  CHECK(calls.count["dense_4"] == 1);  // the head differs in shape: its own name
  for (const auto& [callee, bodies] : calls.bodies) CHECK(bodies.size() == 1);  // one body per name
  // Weights are explicit Call inputs: activation first, then weight and bias.
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Call") {
      REQUIRE(n.input_size() == 3);
      CHECK(n.input(1).find("_w") != std::string::npos);
      CHECK(n.input(2).find("_b") != std::string::npos);
    }
  CHECK(report["nodes_saved"] == 4);
  CHECK(out.graph().node_size() == proto.graph().node_size() - 4);
  checkValid(*model);
  checkSameMaths(proto, expanded(*model));

  SECTION("function mode: one local function per distinct body, runs in ONNX Runtime") {
    auto fmodel = runOutline(proto, outlineOf({kDenseBlock}, passes::OutlineOptions::Mode::Function), &report);
    auto fout = toProto(*fmodel);
    REQUIRE(fout.functions_size() == 2);
    std::map<std::string, size_t> calls2;
    for (const auto& n : fout.graph().node())
      if (n.domain() == "graphrw.outlined") calls2[n.op_type()]++;
    CHECK(calls2 == std::map<std::string, size_t>{{"dense", 3}, {"dense_4", 1}});
    checkValid(*fmodel);
    checkSameMaths(proto, *fmodel);
  }
  SECTION("deterministic: the same bytes every run") {
    auto again = runOutline(proto, outlineOf({kDenseBlock}));
    CHECK(serialize(*again) == serialize(*model));
  }
}

TEST_CASE("calls of a local function are blocks: the body is outlined, identical calls share it", "[outline]") {
  auto proto = seedM5();
  json report;
  auto model = runOutline(proto, outlineOf({"op_type=SimpleCustomLayer"}), &report);
  auto out = toProto(*model);
  CHECK(out.functions_size() == 0);  // the function is no longer called
  auto calls = callsIn(out.graph().node());
  REQUIRE(calls.count.size() == 1);
  CHECK(calls.count.begin()->second == 2);
  CHECK(report["distinct_bodies"] == 1);
  // The call nodes keep the names custom_1, custom_2.
  std::set<std::string> names;
  for (const auto& n : out.graph().node()) names.insert(n.name());
  CHECK(names.count("custom_1") == 1);
  CHECK(names.count("custom_2") == 1);
  checkValid(*model);
  checkSameMaths(proto, expanded(*model));
  SECTION("in function mode they are outlined already") {
    auto f =
        runOutline(proto, outlineOf({"op_type=SimpleCustomLayer"}, passes::OutlineOptions::Mode::Function), &report);
    CHECK(report["changed"] == false);
    CHECK(report["already_functions"] == 2);
  }
}

TEST_CASE("the BERT-style model, expanded, outlined by encoder layer: one shared callee", "[outline][bert]") {
  TempDir dir;
  auto gen = run(std::string(GRAPHRW_GEN_BERT) + " -o '" + (dir / "bert.onnx").string() + "' --layers 3");
  REQUIRE(gen.status == 0);
  auto original = readProto(dir / "bert.onnx");
  auto exp = runPass(original, passes::createExpandPass({}));
  auto proto = toProto(*exp);
  json report;
  auto model = runOutline(proto, outlineOf({"scope=/encoder/layer.*"}), &report);
  auto out = toProto(*model);
  auto calls = callsIn(out.graph().node());
  REQUIRE(calls.count.size() == 1);
  CHECK(calls.count.begin()->first == "encoder_layer");
  CHECK(calls.count.begin()->second == 3);
  CHECK(calls.bodies.begin()->second.size() == 1);
  size_t bodyNodes = report["callees"]["encoder_layer"]["body_nodes"];
  CHECK(report["main_graph_nodes"]["after"] == proto.graph().node_size() - 3 * bodyNodes + 3);
  CHECK(report["nodes_saved"] == 3 * (bodyNodes - 1));
  // Weights are inputs of the Calls, never initializers of the callee.
  std::set<std::string> inits;
  for (const auto& t : out.graph().initializer()) inits.insert(t.name());
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Call") {
      size_t weights = 0;
      for (const auto& in : n.input()) weights += inits.count(in);
      CHECK(weights >= 16);
      CHECK(n.attribute(0).g().initializer_size() == 0);
    }
  checkValid(*model);
  checkSameMaths(original, expanded(*model), 1e-5, 2);
}

namespace {

// Three scaled layers, `y = relu(x * s * t)`: each layer reads two parameters;
// where `aliased` says, a layer reads its first parameter for both (through an
// Identity, as PyTorch passes merged parameters). The values all differ, so a
// callee that wired the two reads to one parameter would change the maths.
onnx::ModelProto scaledLayers(const std::vector<bool>& aliased) {
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\nscaled (float[2,8] x) => (float[2,8] y) {\n";
  std::string in = "x";
  for (size_t i = 0; i < aliased.size(); ++i) {
    std::string l = "layer" + std::to_string(i);
    std::string s = l + "_s", t = aliased[i] ? l + "_alias" : l + "_t";
    if (aliased[i]) text += "  " + t + " = Identity (" + s + ")\n";
    std::string out = i + 1 == aliased.size() ? "y" : l + "_out";
    text += "  " + l + "_a = Mul (" + in + ", " + s + ")\n  " + l + "_b = Mul (" + l + "_a, " + t + ")\n  " + out +
            " = Relu (" + l + "_b)\n";
    in = out;
  }
  text += "}\n";
  auto m = parseModel(text);
  int k = 0;
  for (auto& n : *m.mutable_graph()->mutable_node()) {  // "/layer1/Mul_4": the layer of the value it writes
    std::string layer = n.output(0) == "y" ? "layer" + std::to_string(aliased.size() - 1)
                                           : n.output(0).substr(0, n.output(0).find('_'));
    n.set_name("/" + layer + "/" + n.op_type() + "_" + std::to_string(k++));
  }
  for (size_t i = 0; i < aliased.size(); ++i) {
    std::string l = "layer" + std::to_string(i);
    addWeight(m, l + "_s", {8}, static_cast<uint32_t>(60 + i));
    if (!aliased[i]) addWeight(m, l + "_t", {8}, static_cast<uint32_t>(70 + i));
  }
  return m;
}

}  // namespace

TEST_CASE("blocks that pass one value where others pass two share one callee with a parameter per read", "[outline]") {
  // Later layers aliased (PyTorch's usual case), the first aliased, and a mix.
  for (const auto& aliased : {std::vector<bool>{false, true, true}, std::vector<bool>{true, false, false},
                              std::vector<bool>{true, false, true}}) {
    auto proto = scaledLayers(aliased);
    json report;
    auto model = runOutline(proto, outlineOf({"scope=/layer*"}), &report);
    auto out = toProto(*model);
    auto calls = callsIn(out.graph().node());
    REQUIRE(calls.count.size() == 1);
    CHECK(calls.count.begin()->second == 3);
    CHECK(report["distinct_bodies"] == 1);
    size_t aliasedLayers = 0;
    for (size_t i = 0; i < aliased.size(); ++i) aliasedLayers += aliased[i];
    CHECK(report["aliased_reads"] == aliasedLayers);
    for (const auto& n : out.graph().node())
      if (n.op_type() == "Call") {
        REQUIRE(n.input_size() == 3);  // the activation and two parameters
        bool same = n.input(1) == n.input(2);
        size_t layer = static_cast<size_t>(n.name()[6] - '0');
        CHECK(same == aliased[layer]);
      }
    checkValid(*model);
    checkSameMaths(proto, expanded(*model));
    checkSameMaths(proto, *runOutline(proto, outlineOf({"scope=/layer*"}, passes::OutlineOptions::Mode::Function)));
  }
}

TEST_CASE("a PyTorch eval export with merged LayerNorm weights: outline alone gives 3 layers 1 callee",
          "[outline][pytorch]") {
  // bert3-opset15.onnx: the untrained LayerNorm weights are one initializer,
  // read by later layers through Identity; ONNX's inference types layer 0's
  // input (rank 3) and not the others'.
  auto path = std::filesystem::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / "bert3-opset15.onnx";
  auto original = readProto(path);
  json report;
  auto model = runOutline(original, outlineOf({"scope=/layers.*"}), &report);
  auto calls = callsIn(toProto(*model).graph().node());
  REQUIRE(calls.count.size() == 1);
  CHECK(calls.count.begin()->second == 3);
  CHECK(report["distinct_bodies"] == 1);
  checkValid(*model);
  checkSameMaths(original, expanded(*model), 1e-5, 2);
}

TEST_CASE("outline checks: convexity, __ipu_number, attribute mode", "[outline]") {
  SECTION("a block that is not convex is an error naming the nodes") {
    auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4] X) => (float[4] Y) {
  a = Relu (X)
  b = Neg (a)
  Y = Add (a, b)
}
)");
    const char* names[] = {"blk/relu", "other/neg", "blk/add"};
    for (int i = 0; i < 3; ++i) proto.mutable_graph()->mutable_node(i)->set_name(names[i]);
    CHECK_THROWS_WITH(
        runOutline(proto, outlineOf({"scope=blk"})),
        Catch::Contains("block 'blk' is not convex: a path leaves it at node 'blk/relu', runs through node "
                        "'other/neg' outside it and comes back at node 'blk/add'"));
  }
  SECTION("__ipu_number: carried to the Call; different values in one block are an error") {
    auto proto = repeatedDense();
    auto setIpu = [&](int node, int64_t ipu) {
      auto* a = proto.mutable_graph()->mutable_node(node)->add_attribute();
      a->set_name("__ipu_number");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(ipu);
    };
    setIpu(0, 1);
    setIpu(1, 1);
    auto model = runOutline(proto, outlineOf({"scope=dense_1,name_regex=.*/(MatMul|Add)"}));
    auto out = toProto(*model);
    bool found = false;
    for (const auto& n : out.graph().node())
      if (n.op_type() == "Call")
        for (const auto& a : n.attribute())
          if (a.name() == "__ipu_number") {
            found = true;
            CHECK(a.i() == 1);
          }
    CHECK(found);
    setIpu(3, 0);
    setIpu(4, 1);
    CHECK_THROWS_WITH(runOutline(proto, outlineOf({"scope=dense_2,name_regex=.*/(MatMul|Add)"})),
                      Catch::Contains("block 'dense_2' spans __ipu_number values: node 'dense_2/MatMul' has 0"));
  }
  SECTION("attributes mode sets even-length __outline pairs on every node of the blocks, merging") {
    auto proto = seedM1();
    auto o = outlineOf({"scope=dense_*"}, passes::OutlineOptions::Mode::Attributes);
    o.keys = {{"layer", "dense"}, {"kind", "ffn"}};
    json report;
    auto model = runOutline(proto, o, &report);
    CHECK(report["nodes_annotated"] == 6);
    auto out = toProto(*model);
    for (const auto& n : out.graph().node()) {
      REQUIRE(n.attribute_size() >= 1);
      const auto& a = n.attribute(n.attribute_size() - 1);
      CHECK(a.name() == "__outline");
      CHECK(a.type() == onnx::AttributeProto::STRINGS);
      CHECK(std::vector<std::string>(a.strings().begin(), a.strings().end()) ==
            std::vector<std::string>{"layer", "dense", "kind", "ffn"});
    }
    auto o2 = outlineOf({"scope=dense_1"}, passes::OutlineOptions::Mode::Attributes);
    o2.keys = {{"kind", "mlp"}};
    auto again = runOutline(out, o2);
    auto out2 = toProto(*again);
    const auto& a = out2.graph().node(0).attribute(out2.graph().node(0).attribute_size() - 1);
    CHECK(std::vector<std::string>(a.strings().begin(), a.strings().end()) ==
          std::vector<std::string>{"layer", "dense", "kind", "mlp"});
    checkSameMaths(proto, *model);
  }
  SECTION("a selector matching nothing is an error") {
    CHECK_THROWS_WITH(runOutline(seedM3(), outlineOf({"op_type=MatMul"})), Catch::Contains("matched no node"));
  }
}
