// place --auto: stages from the cost model (passes/popart/place/place_auto.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "helpers.h"
#include "io/loader.h"
#include "passes/popart/place/place_auto.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path pytorch(const std::string& name) {
  return fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / name;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

int64_t intAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return -1;
}

// The layer of a node ("/bert/encoder/layer.7/..." -> 7 for "/encoder/layer."), -1 outside the layers.
int layerNumber(const std::string& name, const std::string& scope) {
  auto at = name.find(scope);
  if (at == std::string::npos) return -1;
  return std::stoi(name.substr(at + scope.size()));
}

// A 12-layer PyTorch training export with a tied head: legalized for
// inference (Dropout removed, so ONNX Runtime's outputs are comparable),
// placed with the costs of adam training on 5 stages over 4 IPUs, the first
// stage's and the last stage's nodes pinned (the head shares IPU 0 with the
// embedding it is tied to). Each IPU gets 3 layers; the stage costs add up
// to the model's and are what inspect --stages finds on the output; the
// output passes validate --target popart and computes what the input did.
struct TiedExport {
  std::string file, layerScope, firstPin, lastPin, tiedWeight;
};

void checkTwelveLayersOnFourIpus(const TiedExport& e) {
  TempDir dir;
  auto r = run(graphrwBin() + " -q legalize " + q(pytorch(e.file)) + " -o " + q(dir / "legal.onnx"));
  REQUIRE(r.status == 0);
  r = run(graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --auto 5 --ipus 0,1,2,3,0 --pin '0=" + e.firstPin +
          "' --pin '-1=" + e.lastPin + "' --optimizer adam --untie -o " + q(dir / "placed.onnx") + " --report " +
          q(dir / "report.json"));
  REQUIRE(r.status == 0);
  auto placed = readProto(dir / "placed.onnx");
  auto firstPin = SelectorSet::fromJson(
      passes::selectorsFromFlag(e.firstPin), [](const std::string& p) { return p; }, "");
  auto lastPin = SelectorSet::fromJson(
      passes::selectorsFromFlag(e.lastPin), [](const std::string& p) { return p; }, "");
  std::map<int64_t, std::set<int>> layersPerIpu;
  auto loaded = loadModel((dir / "placed.onnx").string());
  size_t pinnedFirst = 0, pinnedLast = 0;
  for (const auto& n : loaded->graph().nodes()) {
    INFO(n->name());
    const auto* ipu = n->attribute("__ipu_number");
    const auto* stage = n->attribute("__pipeline_stage");
    REQUIRE(ipu);
    REQUIRE(stage);
    if (int layer = layerNumber(n->name().str(), e.layerScope); layer >= 0)
      layersPerIpu[ipu->proto().i()].insert(layer);
    if (firstPin.matches(*n)) {
      ++pinnedFirst;
      CHECK(stage->proto().i() == 0);
    }
    if (lastPin.matches(*n)) {
      ++pinnedLast;
      CHECK(stage->proto().i() == 4);
      CHECK(ipu->proto().i() == 0);
    }
  }
  CHECK(pinnedFirst > 0);
  CHECK(pinnedLast > 0);
  REQUIRE(layersPerIpu.size() == 4);
  std::set<int> all;
  for (const auto& [ipu, layers] : layersPerIpu) {
    INFO("IPU " << ipu);
    CHECK(layers.size() == 3);
    all.insert(layers.begin(), layers.end());
  }
  CHECK(all.size() == 12);
  json report = json::parse(readFile(dir / "report.json"));
  const json& stages = report["passes"][0]["auto"]["stages"];
  REQUIRE(stages.size() == 5);
  CHECK(report["passes"][0]["auto"]["units"] == "layers");
  CHECK(report["passes"][0]["auto"]["unknown_shapes"] == 0);
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
  // The tied weight is read by stage 0 (Gather) and stage 4 (the head): counted in both.
  uint64_t initializers = 0, tied = 0;
  for (const auto& init : loaded->graph().initializers()) {
    initializers += init.tensor->storedBytes();
    if (init.value->name() == e.tiedWeight) tied = init.tensor->storedBytes();
  }
  REQUIRE(tied > 0);
  CHECK(weights == initializers + tied);
  r = run(graphrwBin() + " validate --target popart " + q(dir / "placed.onnx"));
  CHECK(r.status == 0);
  // ONNX Runtime runs ai.graphcore's ops by their definitions (mapBack); placement changes no output.
  auto before = loadModel((dir / "legal.onnx").string());
  checkSameMaths(mapBack(*before), mapBack(*loaded), 1e-5, 40);
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
  std::vector<std::string> names = {"/bert/encoder/layer.3/attention/self/MatMul",
                                    "/layer1/layer1.0/conv1/Conv",
                                    "/h_11/mlp/Add",
                                    "Identity_9",
                                    "/cls/transform/Mul_1/GeluErf",
                                    "/layers.0"};
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
  checkTwelveLayersOnFourIpus({"bert-mlm-train-opset15.onnx", "/encoder/layer.", "scope=/bert/embeddings/",
                               "scope=/cls/", "bert.embeddings.word_embeddings.weight"});
}

TEST_CASE(
    "place --auto on a 12-layer PyTorch GPT-2 LM export: 4 IPUs, embeddings and tied head on IPU 0, 3 layers each",
    "[place][auto][pytorch]") {
  checkTwelveLayersOnFourIpus({"gpt2-lm-train-opset15.onnx", "/transformer/h.",
                               "scope=/transformer/wte/|scope=/transformer/wpe/",
                               "scope=/transformer/ln_f/|scope=/lm_head/", "transformer.wte.weight"});
}

TEST_CASE("place --auto: the split a user would write by hand, byte for byte, and a stage pinned by --stage",
          "[place][auto]") {
  TempDir dir;
  auto r = run(graphrwBin() + " -q legalize " + q(pytorch("bert3-opset15.onnx")) +
               " --dim batch=2 --dim sequence=8 -o " + q(dir / "legal.onnx"));
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
  r = run(graphrwBin() + " -q run " + q(dir / "rules.json") + " " + q(dir / "legal.onnx") + " -o " +
          q(dir / "rules.onnx"));
  REQUIRE(r.status == 0);
  CHECK(readFile(dir / "rules.onnx") == readFile(dir / "pinned.onnx"));
}

TEST_CASE("place --auto: what cannot be done says why, and how much memory is missing", "[place][auto]") {
  TempDir dir;
  auto r = run(graphrwBin() + " -q legalize " + q(pytorch("bert3-opset15.onnx")) +
               " --dim batch=2 --dim sequence=8 -o " + q(dir / "legal.onnx"));
  REQUIRE(r.status == 0);
  std::string place = graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --untie -o " + q(dir / "out.onnx") + " ";
  // Layer 0's stage holds the embeddings too: 20544 bytes of weights and 10304 of live activations.
  r = run(place + "--auto 3 --ipu-memory 25KiB");
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             Catch::Contains("place --auto 3: no placement fits 25.0 KiB per IPU; the one needing the least memory: "
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

TEST_CASE("place --auto: with fewer layers than stages, stages are cut between nodes", "[place][auto]") {
  // Six equal MatMuls; the first three named into layer 0 and the rest into
  // layer 1: two layers for three stages, so the units are the nodes.
  auto model = loadModel(parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4,8] x) => (float[4,8] y) <float[8,8] w = {1,0,0,0,0,0,0,0, 0,1,0,0,0,0,0,0, 0,0,1,0,0,0,0,0, 0,0,0,1,0,0,0,0,
                                                0,0,0,0,1,0,0,0, 0,0,0,0,0,1,0,0, 0,0,0,0,0,0,1,0, 0,0,0,0,0,0,0,1}> {
  a = MatMul (x, w)
  b = MatMul (a, w)
  c = MatMul (b, w)
  d = MatMul (c, w)
  e = MatMul (d, w)
  y = MatMul (e, w)
}
)"));
  size_t i = 0;
  for (const auto& n : model->graph().nodes()) {
    ir::Rewriter rw(*model);
    rw.renameNode(n.get(), std::string(i < 3 ? "/layers.0/" : "/layers.1/") + "MatMul_" + std::to_string(i));
    ++i;
  }
  passes::AutoPlaceOptions options;
  options.stages = 3;
  options.ipuMemory = 1 << 20;
  auto placed = passes::autoPlace(*model, options);
  CHECK(placed.stageOf == std::vector<size_t>{0, 0, 1, 1, 2, 2});
  CHECK(placed.report["units"] == "nodes");
  for (size_t k = 0; k < 3; ++k) {
    INFO("stage " << k);
    CHECK(placed.report["stages"][k]["flops"] == 2 * 2 * 4 * 8 * 8);  // two MatMuls of 4x8x8 multiply-adds
  }
  // With as many layers as stages, the layers are the units.
  options.stages = 2;
  placed = passes::autoPlace(*model, options);
  CHECK(placed.stageOf == std::vector<size_t>{0, 0, 0, 1, 1, 1});
  CHECK(placed.report["units"] == "layers");
}

TEST_CASE(
    "place --auto --batch and --costs: the micro-batch and a calibration change what fits, from flags and rule files",
    "[place][auto][calibration]") {
  TempDir dir;
  auto r = run(graphrwBin() + " -q legalize " + q(pytorch("bert3-opset15.onnx")) +
               " --dim batch=2 --dim sequence=8 -o " + q(dir / "legal.onnx"));
  REQUIRE(r.status == 0);
  std::string place =
      graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --untie -o " + q(dir / "out.onnx") + " --auto 3 ";
  r = run(place + "--ipu-memory 40KiB");
  REQUIRE(r.status == 0);
  fs::remove(dir / "out.onnx");
  // Batch 16 instead of 2: 8 times the activations (10304 bytes kept live in stage 0), the same 20544 bytes of weights.
  r = run(place + "--ipu-memory 40KiB --batch 16");
  CHECK(r.status == 2);
  CHECK_THAT(
      r.err,
      Catch::Contains("no placement fits 40.0 KiB per IPU; the one needing the least memory: stage 0 needs 92.6 KiB"));
  CHECK_FALSE(fs::exists(dir / "out.onnx"));
  // A reserve of 15 KiB leaves 25 KiB for the tensors.
  writeFile(dir / "calibration.json", R"({"reserve": "15KiB", "ops": {"Softmax": {"flops_per_element": 10}}})");
  r = run(place + "--ipu-memory 40KiB --costs " + q(dir / "calibration.json"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             Catch::Contains("no placement fits 25.0 KiB (40.0 KiB less the 15.0 KiB reserve) per IPU; the one needing "
                             "the least memory: stage 0 needs 30.1 KiB (5.1 KiB missing)"));
  writeFile(dir / "huge.json", R"({"reserve": "1GiB"})");
  r = run(place + "--costs " + q(dir / "huge.json"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("the reserve (1.0 GiB) leaves nothing of 900.0 MiB per IPU"));
  // An op no node has is a typo until said otherwise.
  writeFile(dir / "typo.json", R"({"ops": {"Softmx": {"flops_per_element": 10}}})");
  r = run(place + "--costs " + q(dir / "typo.json"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("costs: the calibration's op 'Softmx' is not in the model"));
  r = run(place + "--costs " + q(dir / "typo.json") + " --allow-no-match");
  CHECK(r.status == 0);
  // Softmax's FLOPs per element count: 3 layers x 2 heads x 8 x 8 scores, 10 each, spread over the stages.
  writeFile(dir / "softmax.json", R"({"ops": {"Softmax": {"flops_per_element": 10}}})");
  r = run(graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --untie --auto 3 --costs " + q(dir / "softmax.json") +
          " --batch 4 --report " + q(dir / "calibrated.json") + " -o " + q(dir / "flags.onnx"));
  REQUIRE(r.status == 0);
  r = run(place + "--batch 4 --report " + q(dir / "plain.json"));
  REQUIRE(r.status == 0);
  json calibrated = json::parse(readFile(dir / "calibrated.json"))["passes"][0]["auto"];
  json plain = json::parse(readFile(dir / "plain.json"))["passes"][0]["auto"];
  // The embeddings are no layer: the run before the first is named after it.
  CHECK(plain["stages"][0]["first"] == "(before /layers.0)");
  CHECK(plain["stages"][0]["last"] == "/layers.0");
  CHECK(calibrated["batch"] == 4);
  CHECK(calibrated["model_batch"] == 2);
  uint64_t added = 0;
  for (size_t k = 0; k < 3; ++k)
    added += calibrated["stages"][k]["flops"].get<uint64_t>() - plain["stages"][k]["flops"].get<uint64_t>();
  CHECK(added == 3 * (4 * 2 * 8 * 8) * 10);
  // In a rule file: the calibration inline, or a file named relative to the rule file.
  fs::create_directories(dir / "rules");
  fs::copy_file(dir / "softmax.json", dir / "rules" / "softmax.json");
  for (const std::string costs : {R"({"ops": {"Softmax": {"flops_per_element": 10}}})", R"("softmax.json")"}) {
    INFO(costs);
    writeFile(dir / "rules" / "place.json", R"({"version": 1, "passes": [{"pass": "place", "auto": 3, "untie": true,
      "batch": 4, "costs": )" + costs + "}]}");
    r = run(graphrwBin() + " -q run " + q(dir / "rules" / "place.json") + " " + q(dir / "legal.onnx") + " -o " +
            q(dir / "rules.onnx"));
    REQUIRE(r.status == 0);
    CHECK(readFile(dir / "rules.onnx") == readFile(dir / "flags.onnx"));
  }
  writeFile(dir / "rules" / "place.json", R"({"version": 1, "passes": [{"pass": "place", "auto": 3,
    "costs": {"ops": {"Softmax": {"flops_per_elem": 10}}}}]})");
  r = run(graphrwBin() + " -q run " + q(dir / "rules" / "place.json") + " " + q(dir / "legal.onnx") + " -o " +
          q(dir / "rules.onnx"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("place.json:2"));
  CHECK_THAT(r.err, Catch::Contains("unknown key 'flops_per_elem' (did you mean 'flops_per_element'?)"));
  r = run(graphrwBin() + " -q place " + q(dir / "legal.onnx") + " --ipus 0 --batch 4 -o " + q(dir / "x.onnx"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("goes with auto (--auto N)"));
  // inspect --stages takes the same calibration file.
  r = run(graphrwBin() + " inspect --stages --json --batch 4 --costs " + q(dir / "softmax.json") + " " +
          q(dir / "flags.onnx"));
  REQUIRE(r.status == 0);
  json inspected = json::parse(r.out);
  for (size_t k = 0; k < 3; ++k) {
    INFO("stage " << k);
    CHECK(inspected["stages"][k]["flops"] == calibrated["stages"][k]["flops"]);
    CHECK(inspected["stages"][k]["memory"] == calibrated["stages"][k]["memory"]);
  }
}
