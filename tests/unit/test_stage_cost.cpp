// The stage cost model behind `inspect --stages` (lib/analysis/stage_cost.h).
#include <catch2/catch.hpp>

#include "analysis/stage_cost.h"
#include "analysis/types.h"
#include "io/loader.h"
#include "ir/rewriter.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::test;
using nlohmann::json;

namespace {

// Two stages on two IPUs: MatMul -> Relu -> checkpoint on stage 0, MatMul on stage 1.
const char* kPlaced = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8] x) => (float[1,8] y) <float[8,8] w1 = {1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,
                                                     1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8},
                                    float[8,8] w2 = {1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,
                                                     1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8}> {
  h = MatMul <__pipeline_stage = 0, __ipu_number = 0> (x, w1)
  r = Relu <__pipeline_stage = 0, __ipu_number = 0> (h)
  c = Identity <__recompute_output_in_backward_pass = 1, __pipeline_stage = 0, __ipu_number = 0> (r)
  y = MatMul <__pipeline_stage = 1, __ipu_number = 1> (c, w2)
}
)";

json costs(const char* text, stage_cost::Options options = {}) {
  auto model = loadModel(parseModel(text));
  return stage_cost::stageCosts(*model, options);
}

}  // namespace

TEST_CASE("stage costs: FLOPs of MatMul, Gemm, Conv (grouped) and ConvTranspose from static shapes", "[stages]") {
  auto model = loadModel(parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4] a, float[4,5] b, float[6,4] ga, float[6,7] gb, float[1,3,8,8] x, float[16,3,3,3] w,
   float[1,4,8,8] y, float[4,2,3,3] wg, float[1,2,4,4] t, float[2,3,3,3] wt, float[?,4] u)
  => (float[2,3,5] m, float[4,7] gm, float[1,16,8,8] c, float[1,4,8,8] cg, float[1,3,6,6] ct, float[?,5] mu, float[1,8] r) {
  m = MatMul (a, b)
  gm = Gemm <transA = 1> (ga, gb)
  c = Conv <pads = [1, 1, 1, 1]> (x, w)
  cg = Conv <group = 2, pads = [1, 1, 1, 1]> (y, wg)
  ct = ConvTranspose (t, wt)
  mu = MatMul (u, b)
  r = Relu (ga)
}
)"));
  ir::Rewriter rw(*model);
  inferMissingTypes(rw);
  std::map<std::string, std::optional<uint64_t>> flops;
  for (const auto& n : model->graph().nodes()) flops[n->output(0)->name()] = stage_cost::nodeFlops(*n);
  CHECK(flops["m"] == 2u * 4 * (2 * 3 * 5));      // K = 4 per output element
  CHECK(flops["gm"] == 2u * 6 * (4 * 7));         // transA: K is A's first dimension
  CHECK(flops["c"] == 2u * (3 * 9) * (16 * 64));  // C_in * kernel per output element
  CHECK(flops["cg"] == 2u * (2 * 9) * (4 * 64));  // C_in / group
  CHECK(flops["ct"] == 2u * (3 * 9) * (2 * 16));  // C_out / group * kernel per input element
  CHECK_FALSE(flops["mu"].has_value());           // a dynamic batch: unknown, not guessed
  CHECK(flops["r"] == 0u);                        // not a counted op
}

TEST_CASE("stage costs: weights, optimizer state, activations and FLOPs per stage and IPU, and what does not fit",
          "[stages]") {
  SECTION("inference") {
    json j = costs(kPlaced);
    CHECK(j["training"] == false);
    REQUIRE(j["stages"].size() == 2);
    REQUIRE(j["ipus"].size() == 2);
    const json& s0 = j["stages"][0];
    const json& s1 = j["stages"][1];
    CHECK(s0["stage"] == 0);
    CHECK(s0["nodes"] == 3);
    CHECK(s0["weights"] == 256);  // w1: 8 x 8 floats
    CHECK(s0["optimizer_state"] == 0);
    CHECK(s0["flops"] == 2 * 8 * 8);
    // h and r are live together when Relu runs; h is dead by the time the checkpoint runs.
    CHECK(s0["activations"] == 64);
    CHECK(s1["weights"] == 256);
    CHECK(s1["activations"] == 32);
    CHECK(j["total"]["weights"] == 512);  // every initializer of the model, once
    CHECK(j["total"]["flops"] == 2 * 2 * 8 * 8);
    CHECK(j["total"]["memory"] == j["stages"][0]["memory"].get<uint64_t>() + j["stages"][1]["memory"].get<uint64_t>());
    CHECK(j["bottleneck"]["stage"] == 0);
    CHECK(j["bottleneck"]["share"] == 0.5);
    CHECK_FALSE(j.contains("unplaced"));
    CHECK(j["unknown_shapes"] == 0);
  }
  SECTION("training with adam: three fp32 tensors per weight, FLOPs x3, the checkpoint's output and the stretch before it kept") {
    stage_cost::Options o;
    o.optimizer = stage_cost::Optimizer::Adam;
    o.ipuMemory = 1100;
    json j = costs(kPlaced, o);
    CHECK(j["training"] == true);
    CHECK(j["optimizer"] == "adam");
    const json& s0 = j["stages"][0];
    CHECK(s0["optimizer_state"] == 3 * 256);
    CHECK(s0["flops"] == 3 * 2 * 8 * 8);
    CHECK(s0["activations"] == 32 + 64);  // c kept; h and r recomputed from x, at most 64 bytes at once
    CHECK(j["stages"][1]["activations"] == 32);
    const json& ipu0 = j["ipus"][0];
    CHECK(ipu0["memory"] == 256 + 768 + 96);
    CHECK(ipu0["fits"] == false);
    CHECK(ipu0["missing"] == 256 + 768 + 96 - 1100);
    CHECK(j["ipus"][1]["fits"] == true);  // 256 + 768 + 32
    CHECK(j["ipus"][1]["missing"] == 0);
  }
  SECTION("sgd keeps one tensor per weight; without the checkpoint every activation is kept") {
    std::string text = kPlaced;
    const std::string mark = "__recompute_output_in_backward_pass = 1, ";
    text.replace(text.find(mark), mark.size(), "");
    stage_cost::Options o;
    o.optimizer = stage_cost::Optimizer::Sgd;
    json j = costs(text.c_str(), o);
    CHECK(j["stages"][0]["optimizer_state"] == 256);
    CHECK(j["stages"][0]["activations"] == 3 * 32);
  }
  SECTION("a model without placement is one IPU; nodes without it in a placed model are reported apart") {
    std::string text = kPlaced;
    json whole = costs(std::string(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8] x) => (float[1,8] y) { y = Relu (x) }
)").c_str());
    CHECK(whole["placed"] == false);
    REQUIRE(whole["ipus"].size() == 1);
    CHECK(whole["ipus"][0]["nodes"] == 1);
    CHECK(whole["stages"].empty());
    const std::string placed = "y = MatMul <__pipeline_stage = 1, __ipu_number = 1>";
    text.replace(text.find(placed), placed.size(), "y = MatMul");
    json j = costs(text.c_str());
    REQUIRE(j.contains("unplaced"));
    CHECK(j["unplaced"]["nodes"] == 1);
    CHECK(j["stages"].size() == 1);
    CHECK(j["total"]["nodes"] == 4);
  }
}

TEST_CASE("stage costs: sizes with units, and the CLI's --stages, --optimizer and --ipu-memory", "[stages][cli]") {
  CHECK(stage_cost::parseBytes("900MiB", "m") == 900ull * 1024 * 1024);
  CHECK(stage_cost::parseBytes("1.5GB", "m") == 1500000000ull);
  CHECK(stage_cost::parseBytes("65536", "m") == 65536u);
  CHECK(stage_cost::parseBytes("2KiB", "m") == 2048u);
  CHECK(stage_cost::parseBytes("1KB", "m") == 1000u);
  for (const char* bad : {"", "MiB", "-5MiB", "5XB", "0", "nan", "1e30GB", " 5MB"}) {
    INFO(bad);
    CHECK_THROWS_AS(stage_cost::parseBytes(bad, "--ipu-memory"), Error);
  }
  CHECK(stage_cost::parseOptimizer("lamb") == stage_cost::Optimizer::Lamb);
  CHECK_FALSE(stage_cost::parseOptimizer("adagrad").has_value());

  TempDir dir;
  writeProto(parseModel(kPlaced), dir / "m.onnx");
  std::string m = "'" + (dir / "m.onnx").string() + "'";
  auto r = run(graphrwBin() + " inspect --stages --optimizer adam --ipu-memory 1100 " + m);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("training, adam"));
  CHECK_THAT(r.out, Catch::Contains("stage 0"));
  CHECK_THAT(r.out, Catch::Contains("stage 1"));
  CHECK_THAT(r.out, Catch::Contains("ipu 0 does not fit: 20 B missing"));
  CHECK_THAT(r.out, Catch::Contains("Bottleneck: stage 0 (50% of the FLOPs)"));
  CHECK(r.out.find("ipu 1 does not fit") == std::string::npos);  // 256 + 768 + 32 bytes
  // The picture: well-formed SVG (Python's XML parser), every stage named, the bottleneck and the excess shown.
  r = run(graphrwBin() + " inspect --stages --optimizer adam --ipu-memory 1100 " + m + " --svg '" + (dir / "s.svg").string() + "'");
  REQUIRE(r.status == 0);
  std::string svg = readFile(dir / "s.svg");
  CHECK(run("/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; "
            "r = E.parse(sys.argv[1]).getroot(); sys.exit(r.tag != '{http://www.w3.org/2000/svg}svg')\" '" +
            (dir / "s.svg").string() + "'")
            .status == 0);
  CHECK_THAT(svg, Catch::Contains(">stage 0 on IPU 0<"));
  CHECK_THAT(svg, Catch::Contains(">stage 1 on IPU 1<"));
  CHECK_THAT(svg, Catch::Contains("(bottleneck)"));
  CHECK_THAT(svg, Catch::Contains(">20 B too much<"));
  r = run(graphrwBin() + " inspect --svg '" + (dir / "t.svg").string() + "' " + m);
  CHECK(r.status == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "t.svg"));
  r = run(graphrwBin() + " inspect --stages --json " + m);
  REQUIRE(r.status == 0);
  CHECK(json::parse(r.out)["total"]["weights"] == 512);
  r = run(graphrwBin() + " inspect --stages --ipu-memory 9OOMB " + m);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--ipu-memory: '9OOMB' is not a size"));
  r = run(graphrwBin() + " inspect --optimizer adam " + m);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--optimizer, --ipu-memory and --svg go with --stages"));
  r = run(graphrwBin() + " inspect --stages --optimizer adagrad " + m);
  CHECK(r.status == 2);
}

TEST_CASE("stage costs of a PyTorch BERT export placed on 3 IPUs: equal layers cost the same, totals are the model's",
          "[stages][pytorch]") {
  TempDir dir;
  std::string model = (std::filesystem::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / "bert3-opset15.onnx").string();
  std::string legal = (dir / "legal.onnx").string(), placed = (dir / "placed.onnx").string();
  // The export's value_info keeps a dynamic dimension ("float[1,?,16]" after the positions' Gather): the cost
  // model infers those shapes again from the static inputs.
  auto r = run(graphrwBin() + " -q legalize '" + model + "' --dim batch=2 --dim sequence=8 -o '" + legal + "'");
  REQUIRE(r.status == 0);
  writeFile(dir / "place.json", R"({"version": 1, "passes": [{"pass": "place", "untie": true, "ipus": [0, 1, 2],
    "stages": [[{"scope": "/embeddings/"}, {"scope": "/layers.0/"}], {"scope": "/layers.1/"}, {"scope": "/layers.2/"}]}]})");
  r = run(graphrwBin() + " -q run '" + (dir / "place.json").string() + "' '" + legal + "' -o '" + placed + "'");
  REQUIRE(r.status == 0);
  r = run(graphrwBin() + " inspect --stages --json --optimizer momentum '" + placed + "'");
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  CHECK(j["unknown_shapes"] == 0);
  CHECK(j["unknown_flops"] == 0);
  REQUIRE(j["stages"].size() == 3);
  const json &s1 = j["stages"][1], &s2 = j["stages"][2];
  CHECK(s1["flops"].get<uint64_t>() > 0);
  CHECK(j["stages"][0]["layers"] == json::array({"/layers.0"}));  // the embeddings are no layer
  CHECK(s1["layers"] == json::array({"/layers.1"}));
  CHECK(s2["ipus"] == json::array({2}));
  for (const char* field : {"nodes", "weights", "optimizer_state", "activations", "flops"}) {
    INFO(field);
    CHECK(s1[field] == s2[field]);
  }
  // Every initializer is read by one stage (untied), so the stages' weights add up to the model's.
  auto loaded = loadModel(placed);
  uint64_t bytes = 0, floats = 0;
  for (const auto& init : loaded->graph().initializers()) {
    bytes += init.tensor->storedBytes();
    if (init.tensor->dataType() == onnx::TensorProto::FLOAT) floats += static_cast<uint64_t>(init.tensor->elementCount()) * 4;
  }
  CHECK(j["total"]["weights"] == bytes);
  CHECK(j["total"]["optimizer_state"] == 2 * floats);  // gradient and velocity
  CHECK(j["total"]["nodes"] == loaded->graph().nodeCount());
  // A layer (export.py: hidden 16, 2 heads of 8, feed-forward 64) at batch 2, sequence 8: q, k, v and o
  // [2,8,16] x [16,16], up [2,8,16] x [16,64], down [2,8,64] x [64,16], scores [2,2,8,8] x [2,2,8,8] and context
  // [2,2,8,8] x [2,2,8,8]; three times over in training (forward, and the two products of the backward pass).
  uint64_t tokens = 2 * 8;
  uint64_t forward = 4 * (2 * 16 * tokens * 16) + 2 * 16 * tokens * 64 + 2 * 64 * tokens * 16 + 2 * (2 * 8 * (2 * 2 * 8 * 8));
  CHECK(s1["flops"] == 3 * forward);
}
