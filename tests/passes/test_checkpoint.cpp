#include <catch2/catch.hpp>

#include <set>

#include "driver/inspect.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/popart/checkpoint/checkpoint.h"
#include "seed_models.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;

namespace {

std::unique_ptr<Model> runCheckpoint(const onnx::ModelProto& proto, passes::CheckpointOptions options,
                                     nlohmann::json* report = nullptr) {
  return runPass(proto, passes::createCheckpointPass(std::move(options)), report);
}

passes::CheckpointOptions after(std::vector<std::string> selectors) {
  passes::CheckpointOptions o;
  for (const auto& s : selectors) o.after.any.push_back(Selector::parse(s));
  return o;
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool isCheckpointProto(const onnx::NodeProto& n) {
  const auto* a = attr(n, "__recompute_output_in_backward_pass");
  return n.op_type() == "Identity" && a && a->type() == onnx::AttributeProto::INT && a->i() == 1;
}

// In one list of nodes (a graph or a function body): every value produced by a
// node named in `producers` that was read before is now read by exactly one
// checkpoint and by nothing else outside `producers`' blocks; no other value is
// checkpointed; every checkpoint has exactly PopART's attributes.
// `blockOf` maps a node name to its block (default: each node is its own block).
std::string ownBlock(const std::string& name) { return name; }
std::string scopeBlock(const std::string& name) { return name.substr(0, name.find('/')); }

void checkCheckpoints(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                      const std::set<std::string>& producers, std::string (*blockOf)(const std::string&) = ownBlock) {
  std::map<std::string, std::string> producerOf;
  for (const auto& n : nodes)
    for (const auto& o : n.output()) producerOf[o] = n.name();
  std::set<std::string> checkpointed;
  for (const auto& n : nodes) {
    if (!isCheckpointProto(n)) {
      CHECK(attr(n, "__recompute_output_in_backward_pass") == nullptr);
      continue;
    }
    INFO("checkpoint " << n.name());
    REQUIRE(n.input_size() == 1);
    CHECK(producers.count(producerOf[n.input(0)]) == 1);
    CHECK(n.name() == producerOf[n.input(0)] + "/Checkpoint");
    CHECK(checkpointed.insert(n.input(0)).second);  // exactly one per value
    const auto* patterns = attr(n, "__exclude_patterns");
    REQUIRE(patterns != nullptr);
    CHECK(patterns->type() == onnx::AttributeProto::STRINGS);
    CHECK(std::vector<std::string>(patterns->strings().begin(), patterns->strings().end()) ==
          std::vector<std::string>{"PreUniRepl", "PostNRepl"});
    CHECK(n.attribute_size() == 2);
    // Outside its block, the value goes only to its checkpoint.
    for (const auto& m : nodes)
      if (&m != &n && blockOf(m.name()) != blockOf(producerOf[n.input(0)]))
        for (const auto& in : m.input()) CHECK(in != n.input(0));
  }
  CHECK(checkpointed.size() == producers.size());
}

size_t countCheckpoints(const onnx::ModelProto& m) {
  size_t c = 0;
  for (const auto& n : m.graph().node()) c += isCheckpointProto(n);
  for (const auto& f : m.functions())
    for (const auto& n : f.node()) c += isCheckpointProto(n);
  return c;
}

}  // namespace

TEST_CASE("seed case 9: checkpoints after Dense-like blocks (M1, M2, M4)", "[checkpoint][seed]") {
  SECTION("M1: dense blocks; the graph output keeps its name") {
    auto proto = seedM1();
    nlohmann::json report;
    auto model = runCheckpoint(proto, after({"scope=dense_*"}), &report);
    auto out = toProto(*model);
    checkCheckpoints(out.graph().node(), {"dense_1/Relu", "dense_2/Softmax"}, scopeBlock);
    CHECK(out.graph().output(0).name() == "output");
    CHECK(out.graph().output(0).type().tensor_type().shape().dim_size() == 3);
    CHECK(report["blocks_matched"] == 2);
    CHECK(report["checkpoints_added"] == 2);
    checkValid(*model);
    checkSameMaths(proto, *model);
  }
  SECTION("M2: dense blocks and Dropouts") {
    auto proto = seedM2();
    auto model = runCheckpoint(proto, after({"scope=dense_*", "op_type=Dropout"}));
    auto out = toProto(*model);
    checkCheckpoints(out.graph().node(), {"dense_1/Relu", "dropout"}, scopeBlock);
    checkValid(*model);
    checkSameMaths(proto, *model);
  }
  SECTION("M4: inside the function body") {
    auto proto = seedM4();
    auto model = runCheckpoint(proto, after({"scope=dense_*", "op_type=Dropout"}));
    auto out = toProto(*model);
    REQUIRE(out.functions_size() == 1);
    checkCheckpoints(out.functions(0).node(),
                     {"dense_1/Relu", "dense_2/Relu", "dense_3/Softmax", "dropout_1", "dropout_2"}, scopeBlock);
    checkCheckpoints(out.graph().node(), {});
    checkValid(*model);
    checkSameMaths(proto, *model);
  }
  SECTION("M4: after the call of the custom layer") {
    auto proto = seedM4();
    auto model = runCheckpoint(proto, after({"op_type=CustomLayer"}));
    auto out = toProto(*model);
    checkCheckpoints(out.graph().node(), {"custom_layer"});
    checkCheckpoints(out.functions(0).node(), {});
    CHECK(out.graph().output(0).name() == "output");
    checkSameMaths(proto, *model);
  }
}

TEST_CASE("seed case 9 on M3 (no dense): a selector matching nothing is an error unless allowed",
          "[checkpoint][seed]") {
  auto proto = seedM3();
  REQUIRE_THROWS_WITH(runCheckpoint(proto, after({"scope=dense_*"})),
                      Catch::Contains("selector 'scope=dense_*' matched no node"));
  auto options = after({"scope=dense_*"});
  options.allowNoMatch = true;
  nlohmann::json report;
  auto model = runCheckpoint(proto, options, &report);
  CHECK(report["changed"] == false);
  CHECK(countCheckpoints(toProto(*model)) == 0);
  // A list of alternatives is one selector: one alternative matching is enough.
  REQUIRE_NOTHROW(runCheckpoint(proto, after({"scope=dense_*", "op_type=Conv"})));
  REQUIRE_THROWS_WITH(runCheckpoint(proto, after({"scope=dense_*", "op_type=MatMul"})),
                      Catch::Contains("selector 'scope=dense_* | op_type=MatMul' matched no node"));
}

TEST_CASE("checkpoint is idempotent and consumers inside a block keep the original", "[checkpoint]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[4] X) => (float[4] Y, float[4] Z) {
  a = Relu (X)
  b = Add (a, a)
  c = Mul (b, a)
  Y = Neg (c)
  Z = Abs (b)
}
)");
  const char* names[] = {"blk/relu", "blk/add", "blk/mul", "after/neg", "after/abs"};
  for (int i = 0; i < 5; ++i) proto.mutable_graph()->mutable_node(i)->set_name(names[i]);
  auto once = runCheckpoint(proto, after({"scope=blk"}));
  auto first = toProto(*once);
  // Outputs of the block: b (read by after/abs) and c (read by after/neg); a is read only inside.
  checkCheckpoints(first.graph().node(), {"blk/add", "blk/mul"}, scopeBlock);
  // blk/mul still reads a and b directly... b from inside the block.
  const auto& mul = first.graph().node(3);
  REQUIRE(mul.name() == "blk/mul");
  CHECK(mul.input(0) == "b");
  checkSameMaths(proto, first);

  nlohmann::json report;
  auto twice = runCheckpoint(first, after({"scope=blk"}), &report);
  CHECK(report["changed"] == false);
  CHECK(serialize(*twice) == serialize(*once));
  SECTION("a node selector sees the existing checkpoint too") {
    auto again = runCheckpoint(first, after({"name=blk/mul"}), &report);
    CHECK(report["changed"] == false);
    CHECK(report["already_checkpointed"] == 1);
  }
  SECTION("a consumer outside a smaller block is moved onto the existing checkpoint, no second one is added") {
    auto again = runCheckpoint(first, after({"name=blk/add"}), &report);
    CHECK(report["already_checkpointed"] == 1);
    CHECK(report["checkpoints_added"] == 0);
    auto out = toProto(*again);
    checkCheckpoints(out.graph().node(), {"blk/add", "blk/mul"});
    checkSameMaths(proto, out);
  }
}

TEST_CASE("checkpoint --every K keeps the K-th, 2K-th... blocks in graph order", "[checkpoint]") {
  TempDir dir;
  auto gen = run(std::string(GRAPHRW_GEN_BERT) + " -o '" + (dir / "bert.onnx").string() + "' --layers 4");
  REQUIRE(gen.status == 0);
  auto proto = readProto(dir / "bert.onnx");
  auto options = after({"op_type=BertLayer"});
  options.every = 2;
  nlohmann::json report;
  auto model = runCheckpoint(proto, options, &report);
  CHECK(report["blocks_matched"] == 4);
  CHECK(report["blocks_selected"] == 2);
  auto out = toProto(*model);
  std::vector<std::string> layers;
  for (const auto& n : out.graph().node())
    if (isCheckpointProto(n)) layers.push_back(n.name());
  CHECK(layers == std::vector<std::string>{"/encoder/layer.1/Checkpoint", "/encoder/layer.3/Checkpoint"});
  checkSameMaths(proto, *model);
}

TEST_CASE("checkpoint in recompute mode marks the blocks' nodes with 2 and adds nothing", "[checkpoint]") {
  auto proto = seedM1();
  auto options = after({"scope=dense_1"});
  options.mode = passes::CheckpointOptions::Mode::Recompute;
  nlohmann::json report;
  auto model = runCheckpoint(proto, options, &report);
  auto out = toProto(*model);
  CHECK(out.graph().node_size() == proto.graph().node_size());
  CHECK(report["nodes_marked_recompute"] == 3);
  for (const auto& n : out.graph().node()) {
    const auto* a = attr(n, "__recompute_output_in_backward_pass");
    if (n.name().rfind("dense_1/", 0) == 0) {
      REQUIRE(a != nullptr);
      CHECK(a->type() == onnx::AttributeProto::INT);
      CHECK(a->i() == 2);
    } else {
      CHECK(a == nullptr);
    }
  }
  auto again = runCheckpoint(out, options, &report);
  CHECK(report["changed"] == false);
}

TEST_CASE("checkpoints inside subgraphs", "[checkpoint]") {
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (bool c, float[2] X) => (float[2] Y) {
  Y = If (c) <then_branch = g1 () => (float[2] t) {
      r = Relu (X)
      t = Neg (r)
    }, else_branch = g2 () => (float[2] e) {
      e = Abs (X)
    }>
}
)");
  auto* then = proto.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then->mutable_node(0)->set_name("inner/relu");
  then->mutable_node(1)->set_name("inner/neg");
  proto.mutable_graph()->mutable_node(0)->set_name("if");
  auto model = runCheckpoint(proto, after({"op_type=Relu"}));
  auto out = toProto(*model);
  const auto& g = out.graph().node(0).attribute(0).g();
  checkCheckpoints(g.node(), {"inner/relu"});
  checkValid(*model);
  checkSameMaths(proto, *model, 1e-5, 1);
}

TEST_CASE("the BERT-style model, expanded, checkpointed per encoder layer by scope", "[checkpoint][bert]") {
  TempDir dir;
  auto gen = run(std::string(GRAPHRW_GEN_BERT) + " -o '" + (dir / "bert.onnx").string() + "' --layers 3");
  REQUIRE(gen.status == 0);
  auto expanded = run(graphrwBin() + " expand '" + (dir / "bert.onnx").string() + "' -o '" +
                      (dir / "expanded.onnx").string() + "'");
  REQUIRE(expanded.status == 0);
  auto proto = readProto(dir / "expanded.onnx");
  nlohmann::json report;
  auto model = runCheckpoint(proto, after({"scope=/encoder/layer.*"}), &report);
  CHECK(report["blocks_matched"] == 3);
  CHECK(report["checkpoints_added"] == 3);
  auto out = toProto(*model);
  std::vector<std::string> names;
  for (const auto& n : out.graph().node())
    if (isCheckpointProto(n)) names.push_back(n.name());
  REQUIRE(names.size() == 3);
  for (int i = 0; i < 3; ++i)
    CHECK(names[static_cast<size_t>(i)].rfind("/encoder/layer." + std::to_string(i) + "/", 0) == 0);
  checkValid(*model);
  checkSameMaths(proto, *model, 1e-5, 2);
  auto summary = inspectModel(*model);
  CHECK(summary["recomputation"]["checkpoints"].size() == 3);
}
