// The stage cost model behind `inspect --stages` (lib/target/popart/stage_cost.h).
#include <catch2/catch.hpp>

#include "analysis/types.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/rewriter.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/stage_cost.h"

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
  => (float[2,3,5] m, float[4,7] gm, float[1,16,8,8] c, float[1,4,8,8] cg, float[1,3,6,6] ct, float[?,5] mu,
      float[1,8] r) {
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
  for (const auto& n : model->graph().nodes()) flops[n->output(0)->name().str()] = stage_cost::nodeFlops(*n);
  CHECK(flops["m"] == 2u * 4 * (2 * 3 * 5));  // K = 4 per output element
  CHECK(flops["gm"] == 2u * 6 * (4 * 7));  // transA: K is A's first dimension
  CHECK(flops["c"] == 2u * (3 * 9) * (16 * 64));  // C_in * kernel per output element
  CHECK(flops["cg"] == 2u * (2 * 9) * (4 * 64));  // C_in / group
  CHECK(flops["ct"] == 2u * (3 * 9) * (2 * 16));  // C_out / group * kernel per input element
  CHECK_FALSE(flops["mu"].has_value());  // a dynamic batch: unknown, not guessed
  CHECK(flops["r"] == 0u);  // not a counted op
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
  SECTION(
      "training with adam: three fp32 tensors per weight, FLOPs x3, the checkpoint's output and the stretch before it "
      "kept") {
    stage_cost::Options o;
    o.optimizer = stage_cost::Optimizer::Adam;
    o.ipuMemory = 1100;
    json j = costs(kPlaced, o);
    CHECK(j["training"] == true);
    CHECK(j["optimizer"] == "adam");
    const json& s0 = j["stages"][0];
    CHECK(s0["optimizer_state"] == 3 * 256);
    CHECK(s0["flops"] == 3 * 2 * 8 * 8);
    // Two stages: stage 0's backward is the pipeline's stage 2, so it holds
    // 3 micro-batches' kept activations (PopART's stash), the last stage 1.
    CHECK(s0["stash"] == 3);
    CHECK(j["stages"][1]["stash"] == 1);
    // c kept, 3 times; h and r recomputed from x one micro-batch at a time, at most 64 bytes at once.
    CHECK(s0["activations"] == 3 * 32 + 64);
    CHECK(j["stages"][1]["activations"] == 32);
    const json& ipu0 = j["ipus"][0];
    CHECK(ipu0["memory"] == 256 + 768 + 160);
    CHECK(ipu0["fits"] == false);
    CHECK(ipu0["missing"] == 256 + 768 + 160 - 1100);
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
    CHECK(j["stages"][0]["activations"] == 3 * (3 * 32));  // h, r and c, for 3 micro-batches
    // Both stages on one IPU run together: nothing waits between them, so no stash.
    const std::string ipu1 = "__ipu_number = 1";
    for (size_t at = text.find(ipu1); at != std::string::npos; at = text.find(ipu1))
      text.replace(at, ipu1.size(), "__ipu_number = 0");
    j = costs(text.c_str(), o);
    CHECK(j["stages"][0]["stash"] == 1);
    CHECK(j["stages"][0]["activations"] == 3 * 32);
  }
  SECTION("a model without placement is one IPU; nodes without it in a placed model are reported apart") {
    std::string text = kPlaced;
    json whole = costs(std::string(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8] x) => (float[1,8] y) { y = Relu (x) }
)")
                           .c_str());
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
  CHECK_THAT(r.out, Catch::Contains("ipu 0 does not fit: 84 B missing"));  // 256 + 768 + 160 bytes
  CHECK_THAT(r.out, Catch::Contains("Bottleneck: stage 0 (50% of the FLOPs)"));
  CHECK(r.out.find("ipu 1 does not fit") == std::string::npos);  // 256 + 768 + 32 bytes
  // The picture: well-formed SVG (Python's XML parser), every stage named, the bottleneck and the excess shown.
  r = run(graphrwBin() + " inspect --stages --optimizer adam --ipu-memory 1100 " + m + " --svg '" +
          (dir / "s.svg").string() + "'");
  REQUIRE(r.status == 0);
  std::string svg = readFile(dir / "s.svg");
  CHECK(run("/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; "
            "r = E.parse(sys.argv[1]).getroot(); sys.exit(r.tag != '{http://www.w3.org/2000/svg}svg')\" '" +
            (dir / "s.svg").string() + "'")
            .status == 0);
  CHECK_THAT(svg, Catch::Contains(">stage 0 on IPU 0<"));
  CHECK_THAT(svg, Catch::Contains(">stage 1 on IPU 1<"));
  CHECK_THAT(svg, Catch::Contains("(bottleneck)"));
  CHECK_THAT(svg, Catch::Contains(">84 B too much<"));
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
  CHECK_THAT(r.err, Catch::Contains("--optimizer, --ipu-memory, --batch, --costs and --svg go with --stages"));
  r = run(graphrwBin() + " inspect --stages --optimizer adagrad " + m);
  CHECK(r.status == 2);
}

TEST_CASE("stage costs of a PyTorch BERT export placed on 3 IPUs: equal layers cost the same, totals are the model's",
          "[stages][pytorch]") {
  TempDir dir;
  std::string model =
      (std::filesystem::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / "bert3-opset15.onnx").string();
  std::string legal = (dir / "legal.onnx").string(), placed = (dir / "placed.onnx").string();
  // The export's value_info keeps a dynamic dimension ("float[1,?,16]" after the positions' Gather): the cost
  // model infers those shapes again from the static inputs.
  auto r = run(graphrwBin() + " -q legalize '" + model + "' --dim batch=2 --dim sequence=8 -o '" + legal + "'");
  REQUIRE(r.status == 0);
  writeFile(dir / "place.json", R"({"version": 1, "passes": [{"pass": "place", "untie": true, "ipus": [0, 1, 2],
    "stages": [[{"scope": "/embeddings/"}, {"scope": "/layers.0/"}], {"scope": "/layers.1/"},
        {"scope": "/layers.2/"}]}]})");
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
  for (const char* field : {"nodes", "weights", "optimizer_state", "flops"}) {
    INFO(field);
    CHECK(s1[field] == s2[field]);
  }
  // Stage 1 holds 3 micro-batches' activations, the last stage 1 (PopART's stash).
  CHECK(s1["stash"] == 3);
  CHECK(s2["stash"] == 1);
  CHECK(s1["activations"] == 3 * s2["activations"].get<uint64_t>());
  // Every initializer is read by one stage (untied), so the stages' weights add up to the model's.
  auto loaded = loadModel(placed);
  uint64_t bytes = 0, floats = 0;
  for (const auto& init : loaded->graph().initializers()) {
    bytes += init.tensor->storedBytes();
    if (init.tensor->dataType() == onnx::TensorProto::FLOAT)
      floats += static_cast<uint64_t>(init.tensor->elementCount()) * 4;
  }
  CHECK(j["total"]["weights"] == bytes);
  CHECK(j["total"]["optimizer_state"] == 2 * floats);  // gradient and velocity
  CHECK(j["total"]["nodes"] == loaded->graph().nodeCount());
  // A layer (export.py: hidden 16, 2 heads of 8, feed-forward 64) at batch 2, sequence 8: q, k, v and o
  // [2,8,16] x [16,16], up [2,8,16] x [16,64], down [2,8,64] x [64,16], scores [2,2,8,8] x [2,2,8,8] and context
  // [2,2,8,8] x [2,2,8,8]; three times over in training (forward, and the two products of the backward pass).
  uint64_t tokens = 2 * 8;
  uint64_t forward =
      4 * (2 * 16 * tokens * 16) + 2 * 16 * tokens * 64 + 2 * 64 * tokens * 16 + 2 * (2 * 8 * (2 * 2 * 8 * 8));
  CHECK(s1["flops"] == 3 * forward);
}

TEST_CASE("stage costs --batch: what depends on the inputs scales with the batch, weights and shapes do not",
          "[stages][batch]") {
  // x: batch 2. t (a weight's transpose) and s (x's shape) do not depend on
  // the batch; h, r and y do.
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,8] x) => (float[2,8] y,
    int64[2] s) <float[8,8] w = {1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,
                                 1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8,1,2,3,4,5,6,7,8}> {
  t = Transpose (w)
  h = MatMul (x, t)
  r = Relu (h)
  y = MatMul (r, w)
  s = Shape (y)
}
)";
  stage_cost::Options o;
  o.optimizer = stage_cost::Optimizer::Sgd;  // training: every output kept, so each value's bytes show
  json base = costs(text, o);
  o.batch = 6;
  json j = costs(text, o);
  CHECK(j["batch"] == 6);
  CHECK(j["model_batch"] == 2);
  CHECK(j["total"]["weights"] == base["total"]["weights"]);
  CHECK(j["total"]["optimizer_state"] == base["total"]["optimizer_state"]);
  CHECK(base["total"]["activations"] == 256 + 3 * 64 + 16);  // t, then h, r and y, then s
  CHECK(j["total"]["activations"] == 256 + 3 * 3 * 64 + 16);
  CHECK(base["total"]["flops"] == 3 * 2 * (2 * 2 * 8 * 8));  // training x3, two MatMuls of 2x8x8 multiply-adds
  CHECK(j["total"]["flops"] == 3 * 2 * (2 * 6 * 8 * 8));
  o.batch = 1;  // smaller than the model's: an exact division
  CHECK(costs(text, o)["total"]["activations"] == 256 + 3 * 32 + 16);
}

TEST_CASE("stage costs --batch on a symbolic batch dimension sets it while costing, and the model keeps its own",
          "[stages][batch]") {
  auto model = loadModel(
      (std::filesystem::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / "resnet-opset15.onnx").string());
  std::string before = serialize(*model);
  stage_cost::Options o;
  o.batch = 1;
  json one = stage_cost::stageCosts(*model, o);
  o.batch = 8;
  json eight = stage_cost::stageCosts(*model, o);
  CHECK(serialize(*model) == before);
  CHECK(one["model_batch"] == "batch");
  CHECK(one["unknown_shapes"] == 0);
  CHECK(eight["unknown_shapes"] == 0);
  CHECK(one["total"]["flops"].get<uint64_t>() > 0);
  CHECK(eight["total"]["flops"].get<uint64_t>() == 8 * one["total"]["flops"].get<uint64_t>());
  CHECK(eight["total"]["weights"] == one["total"]["weights"]);
  // Without --batch the same model has no static shapes to cost.
  CHECK(stage_cost::stageCosts(*model, {})["unknown_shapes"].get<size_t>() > 0);
  // A model without inputs has no batch.
  auto constant = loadModel(parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g () => (float[1] y) {
  y = Constant <value = float[1] {1}> ()
}
)"));
  CHECK_THROWS_WITH(stage_cost::stageCosts(*constant, o),
                    Catch::Contains("--batch 8: the model has no input with a leading (batch) dimension"));
}

TEST_CASE("stage costs: a calibration scales ops' FLOPs and kept bytes, counts FLOPs per element, and reserves memory",
          "[stages][calibration]") {
  stage_cost::Options o;
  o.ipuMemory = 600;
  o.calibration = stage_cost::parseCalibration(json::parse(R"({"reserve": "200",
      "ops": {"MatMul": {"flops_scale": 1.5}, "Relu": {"flops_per_element": 3, "activation_scale": 0}}})"),
                                               "costs");
  CHECK(o.calibration.reserve == 200);
  json j = costs(kPlaced, o);
  const json& s0 = j["stages"][0];
  CHECK(s0["flops"] == 2 * 8 * 8 * 3 / 2 + 3 * 8);  // the MatMul's, x1.5; Relu's 8 outputs, 3 each
  CHECK(s0["activations"] == 32);  // r counts 0 bytes: h alone at its peak
  CHECK(j["reserve"] == 200);
  // IPU 0 holds 256 + 32 bytes: with the reserve 488 of 600 fit; IPU 1 holds 256 + 32 as well.
  CHECK(j["ipus"][0]["fits"] == true);
  o.ipuMemory = 450;
  j = costs(kPlaced, o);
  CHECK(j["ipus"][0]["fits"] == false);
  CHECK(j["ipus"][0]["missing"] == 256 + 32 + 200 - 450);
  CHECK_THAT(stage_cost::renderStageCosts(j), Catch::Contains("450 B per IPU, 200 B of it reserved"));
}

TEST_CASE("stage costs: a calibration with a typo or a bad value is refused naming the place",
          "[stages][calibration]") {
  auto refused = [](const char* text) {
    try {
      stage_cost::parseCalibration(json::parse(text), "costs");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::Usage);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(
      refused(R"({"ops": {"MatMul": {"flop_scale": 2}}})"),
      Catch::Contains("costs at /ops/MatMul/flop_scale: unknown key 'flop_scale' (did you mean 'flops_scale'?)"));
  CHECK_THAT(refused(R"({"ops": {"MatMul": {"flops_scale": -1}}})"),
             Catch::Contains("costs at /ops/MatMul/flops_scale: must be at least 0"));
  CHECK_THAT(refused(R"({"ops": {"MatMul": {}}})"), Catch::Contains("costs at /ops/MatMul: needs at least 1 key(s)"));
  CHECK_THAT(refused(R"({"reserve": "lots"})"), Catch::Contains("costs/reserve: 'lots' is not a size"));
  CHECK_THAT(refused(R"({"reserves": "1MB"})"), Catch::Contains("unknown key 'reserves' (did you mean 'reserve'?)"));
  TempDir dir;
  writeFile(dir / "broken.json", "{\"reserve\": ");
  CHECK_THROWS_WITH(stage_cost::loadCalibration(dir / "broken.json", "--costs"),
                    Catch::Contains("broken.json: not valid JSON"));
  CHECK_THROWS_WITH(stage_cost::loadCalibration(dir / "absent.json", "--costs"),
                    Catch::Contains("absent.json is not a regular file"));
}

TEST_CASE("stage costs: PopART's stash depth per forward stage of a training pipeline", "[stages][stash]") {
  using Ipus = std::vector<std::set<int64_t>>;
  auto depths = [](const Ipus& ipus) {
    std::vector<uint64_t> out;
    for (size_t s = 0; s < ipus.size(); ++s) out.push_back(stage_cost::stashDepth(s, ipus));
    return out;
  };
  // One IPU per stage: 2(N-1-s) + 1.
  CHECK(depths({{0}, {1}, {2}, {3}}) == std::vector<uint64_t>{7, 5, 3, 1});
  CHECK(depths({{0}}) == std::vector<uint64_t>{1});
  // A tied head back on IPU 0 is a fifth stage: no two consecutive stages share an IPU.
  CHECK(depths({{0}, {1}, {2}, {3}, {0}}) == std::vector<uint64_t>{9, 7, 5, 3, 1});
  // Stages 0 and 1 on IPU 0 run together, and so do their backward stages 3 and 4 (0, 0, 1, 0, 0).
  CHECK(depths({{0}, {0}, {1}}) == std::vector<uint64_t>{3, 3, 1});
}

TEST_CASE("stage costs change nothing in the model: types inferred for costing are given back, declared or not",
          "[stages]") {
  auto model = loadModel(parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,8] x, s) => (y, float[?,8] z) {
  y = Relu (x)
  z = Relu (y)
}
)"));
  std::string before = serialize(*model);
  stage_cost::Options o;
  o.optimizer = stage_cost::Optimizer::Adam;
  o.batch = 4;
  json j = stage_cost::stageCosts(*model, o);
  CHECK(j["unknown_shapes"] == 0);
  CHECK(j["total"]["activations"] == 2 * 4 * 8 * 4);  // y and z, batch 4 instead of 2
  CHECK(serialize(*model) == before);
}
