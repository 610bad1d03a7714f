// place --auto: stages from the cost model (passes/place_auto.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "helpers.h"
#include "io/loader.h"
#include "passes/place_auto.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path pytorch(const std::string& name) { return fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / name; }

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

int64_t intAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return -1;
}

// The encoder layer of a node ("/bert/encoder/layer.7/..." -> 7), -1 outside the layers.
int layerNumber(const std::string& name) {
  auto at = name.find("/encoder/layer.");
  if (at == std::string::npos) return -1;
  return std::stoi(name.substr(at + 15));
}

}  // namespace

TEST_CASE("place --auto: layers from node scopes", "[place][auto]") {
  auto model = loadModel(parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) {
  a = Relu (x)
  b = Relu (a)
  c = Relu (b)
  d = Relu (c)
  e = Relu (d)
  y = Relu (e)
}
)"));
  std::vector<std::string> names = {"/bert/encoder/layer.3/attention/self/MatMul", "/layer1/layer1.0/conv1/Conv",
                                    "/h_11/mlp/Add", "Identity_9", "/cls/transform/Mul_1/GeluErf", "/layers.0"};
  std::vector<std::string> expected = {"/bert/encoder/layer.3", "/layer1/layer1.0", "/h_11", "", "", ""};
  size_t i = 0;
  for (const auto& n : model->graph().nodes()) {
    ir::Rewriter rw(*model);
    rw.renameNode(n.get(), names[i]);
    INFO(names[i]);
    CHECK(stage_cost::layerOf(*n) == expected[i]);
    ++i;
  }
}

TEST_CASE("place --auto on a 12-layer PyTorch BERT MLM export: 4 IPUs, embedding and tied head on IPU 0, 3 layers each",
          "[place][auto][pytorch]") {
  TempDir dir;
  // Inference legalize (Dropout removed, so ONNX Runtime's outputs are comparable); the costs are training's (adam).
  auto r = run(graphrwBin() + " -q legalize " + q(pytorch("bert-mlm-train-opset15.onnx")) + " -o " + q(dir / "legal.onnx"));
  REQUIRE(r.status == 0);
  r = run(graphrwBin() + " -q place " + q(dir / "legal.onnx") +
          " --auto 5 --ipus 0,1,2,3,0 --pin '0=scope=/bert/embeddings/' --pin '-1=scope=/cls/' --optimizer adam --untie"
          " -o " + q(dir / "placed.onnx") + " --report " + q(dir / "report.json"));
  REQUIRE(r.status == 0);
  auto placed = readProto(dir / "placed.onnx");
  std::map<int64_t, std::set<int>> layersPerIpu;
  for (const auto& n : placed.graph().node()) {
    int64_t ipu = intAttr(n, "__ipu_number"), stage = intAttr(n, "__pipeline_stage");
    REQUIRE(ipu >= 0);
    REQUIRE(stage >= 0);
    if (int layer = layerNumber(n.name()); layer >= 0) layersPerIpu[ipu].insert(layer);
    if (n.name().rfind("/bert/embeddings/", 0) == 0) CHECK(stage == 0);
    if (n.name().rfind("/cls/", 0) == 0) {
      CHECK(stage == 4);
      CHECK(ipu == 0);
    }
  }
  REQUIRE(layersPerIpu.size() == 4);
  for (const auto& [ipu, layers] : layersPerIpu) {
    INFO("IPU " << ipu);
    CHECK(layers.size() == 3);
  }
  json report = json::parse(readFile(dir / "report.json"));
  const json& stages = report["passes"][0]["auto"]["stages"];
  REQUIRE(stages.size() == 5);
  CHECK(report["passes"][0]["auto"]["units"] == "layers");
  CHECK(report["passes"][0]["auto"]["unknown_shapes"] == 0);
  // The stage costs add up to the model's, and are what inspect --stages finds on the output.
  r = run(graphrwBin() + " inspect --stages --json --optimizer adam " + q(dir / "placed.onnx"));
  REQUIRE(r.status == 0);
  json costs = json::parse(r.out);
  uint64_t flops = 0, weights = 0;
  for (size_t k = 0; k < stages.size(); ++k) {
    INFO("stage " << k);
    CHECK(costs["stages"][k]["flops"] == stages[k]["flops"]);
    CHECK(costs["stages"][k]["memory"] == stages[k]["memory"]);
    flops += stages[k]["flops"].get<uint64_t>();
    weights += stages[k]["weights"].get<uint64_t>();
  }
  CHECK(costs["total"]["flops"] == flops);
  uint64_t initializers = 0;
  auto loaded = loadModel((dir / "placed.onnx").string());
  for (const auto& init : loaded->graph().initializers()) initializers += init.tensor->storedBytes();
  // The word embedding is read by stage 0 (Gather) and stage 4 (the tied decoder): counted in both.
  uint64_t tied = 0;
  for (const auto& init : loaded->graph().initializers())
    if (init.value->name() == "bert.embeddings.word_embeddings.weight") tied = init.tensor->storedBytes();
  REQUIRE(tied > 0);
  CHECK(weights == initializers + tied);
  r = run(graphrwBin() + " validate --target popart " + q(dir / "placed.onnx"));
  CHECK(r.status == 0);
  // ONNX Runtime runs ai.graphcore's ops by their definitions (mapBack); placement changes no output.
  auto before = loadModel((dir / "legal.onnx").string());
  checkSameMaths(mapBack(*before), mapBack(*loaded), 1e-5, 40);
}

TEST_CASE("place --auto: the split a user would write by hand, byte for byte, and a stage pinned by --stage", "[place][auto]") {
  TempDir dir;
  auto r = run(graphrwBin() + " -q legalize " + q(pytorch("bert3-opset15.onnx")) + " --dim batch=2 --dim sequence=8 -o " +
               q(dir / "legal.onnx"));
  REQUIRE(r.status == 0);
  r = run(graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --auto 3 --untie -o " + q(dir / "auto.onnx"));
  REQUIRE(r.status == 0);
  r = run(graphrwBin() + " -q place " + q(dir / "legal.onnx") +
          " --stage 'scope=/layers.0/' --stage 'scope=/layers.1/' --stage 'scope=/layers.2/' --untie -o " +
          q(dir / "manual.onnx"));
  REQUIRE(r.status == 0);
  CHECK(readFile(dir / "auto.onnx") == readFile(dir / "manual.onnx"));
  // Layer 1 pinned to the first of two stages: layers 0 and 1 there, layer 2 alone after.
  r = run(graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --auto 2 --stage 'scope=/layers.1/' --untie -o " +
          q(dir / "pinned.onnx"));
  REQUIRE(r.status == 0);
  auto pinned = readProto(dir / "pinned.onnx");
  for (const auto& n : pinned.graph().node()) {
    INFO(n.name());
    if (n.name().rfind("/layers.1/", 0) == 0) CHECK(intAttr(n, "__pipeline_stage") == 0);
    if (n.name().rfind("/layers.2/", 0) == 0) CHECK(intAttr(n, "__pipeline_stage") == 1);
  }
  // The same as a rule file.
  writeFile(dir / "rules.json", R"({"version": 1, "passes": [{"pass": "place", "auto": 2, "untie": true,
    "pin": [{"stage": 0, "select": {"scope": "/layers.1/"}}]}]})");
  r = run(graphrwBin() + " -q run " + q(dir / "rules.json") + " " + q(dir / "legal.onnx") + " -o " + q(dir / "rules.onnx"));
  REQUIRE(r.status == 0);
  CHECK(readFile(dir / "rules.onnx") == readFile(dir / "pinned.onnx"));
}

TEST_CASE("place --auto: what cannot be done says why, and how much memory is missing", "[place][auto]") {
  TempDir dir;
  auto r = run(graphrwBin() + " -q legalize " + q(pytorch("bert3-opset15.onnx")) + " --dim batch=2 --dim sequence=8 -o " +
               q(dir / "legal.onnx"));
  REQUIRE(r.status == 0);
  std::string place = graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --untie -o " + q(dir / "out.onnx") + " ";
  // Layer 0's stage holds the embeddings too: 20544 bytes of weights and 10304 of live activations.
  r = run(place + "--auto 3 --ipu-memory 25KiB");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("place --auto 3: no placement fits 25.0 KiB per IPU; the one needing the least memory: "
                                    "stage 0 needs 30.1 KiB (5.1 KiB missing)"));
  CHECK_FALSE(fs::exists(dir / "out.onnx"));
  r = run(place + "--auto 3 --pin '0=scope=/layers.2/'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("the pinned nodes cannot go into 3 contiguous stages"));
  r = run(place + "--auto 3 --pin '3=scope=/layers.2/'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("stage 3 of 3"));
  r = run(place + "--auto 3 --pin 'last=scope=/layers.2/'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--pin 'last=scope=/layers.2/': expected STAGE=SELECTOR"));
  r = run(place + "--auto 3 --pin '0=scope=/nothing/'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("pin of stage 0: 'scope=/nothing/' matched no node"));
  r = run(place + "--ipus 0 --optimizer adam");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("goes with auto (--auto N)"));
  r = run(place + "--auto 3 --ipus 0,1");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("2 IPUs for 3 stages (--auto)"));
  r = run(place + "--auto 3 --ipu-memory 9OOMB");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("'9OOMB' is not a size"));
  // Two stages on one IPU: each fits alone, together they do not.
  r = run(place + "--auto 2 --ipus 0,0 --ipu-memory 40KiB");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("the IPUs holding several do not: IPU 0 needs"));
}
