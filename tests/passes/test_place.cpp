// place: pipeline stages by selectors, the rest following the data.
#include <catch2/catch.hpp>

#include <filesystem>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "fold/fold.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/popart/checkpoint/checkpoint.h"
#include "passes/popart/legalize/legalize.h"
#include "passes/popart/place/place.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/check.h"

namespace fs = std::filesystem;
using namespace graphrw;
using namespace graphrw::test;

namespace {

std::optional<int64_t> intAttr(const ir::Node& n, const char* key) {
  const ir::Attribute* a = n.attribute(key);
  if (!a || a->type() != onnx::AttributeProto::INT) return std::nullopt;
  return a->proto().i();
}

// "SEL|SEL": the alternatives of one stage.
SelectorSet alternatives(const std::string& text) {
  SelectorSet set;
  size_t start = 0;
  while (true) {
    size_t bar = text.find('|', start);
    set.any.push_back(Selector::parse(text.substr(start, bar == std::string::npos ? std::string::npos : bar - start)));
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return set;
}

passes::PlaceOptions stages(std::vector<std::string> perStage, std::vector<int64_t> ipus = {}) {
  passes::PlaceOptions o;
  for (const auto& s : perStage) o.stages.push_back(alternatives(s));
  o.ipus = std::move(ipus);
  return o;
}

const char* kChain = R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 3] x) => (float[2, 3] y) {
  c = Constant <value = float {2.0}> ()
  a = Mul (x, c)
  b = Relu (a)
  d = Tanh (b)
  y = Sigmoid (d)
}
)";

onnx::ModelProto chain() {
  auto m = parseModel(kChain);
  const char* names[] = {"/const", "/l0/mul", "/l0/relu", "/l1/tanh", "/head/sigmoid"};
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  return m;
}

}  // namespace

TEST_CASE("place: matched nodes in their stage, the rest following the data, idempotent", "[place]") {
  auto options = stages({"scope=/l0/", "scope=/l1/|scope=/head/"}, {0, 1});
  nlohmann::json report;
  auto m = runPass(chain(), passes::createPlacePass(options), &report);
  INFO(report.dump());
  std::map<std::string, std::pair<int64_t, int64_t>> want = {
      {"/const", {0, 0}}, {"/l0/mul", {0, 0}}, {"/l0/relu", {0, 0}}, {"/l1/tanh", {1, 1}}, {"/head/sigmoid", {1, 1}}};
  for (const auto& n : m->graph().nodes()) {
    INFO(n->name());
    CHECK(intAttr(*n, "__pipeline_stage") == want[n->name().str()].first);
    CHECK(intAttr(*n, "__ipu_number") == want[n->name().str()].second);
  }
  CHECK(report["nodes_per_stage"]["0"] == 3);
  CHECK(report["nodes_per_ipu"]["1"] == 2);
  CHECK(popart::checkImport(*m).empty());
  // Again on its own output: the same bytes.
  TempDir dir;
  writeModel(*m, (dir / "once.onnx").string());
  auto again = runPass(readProto(dir / "once.onnx"), passes::createPlacePass(options), &report);
  writeModel(*again, (dir / "twice.onnx").string());
  CHECK(readFile(dir / "once.onnx") == readFile(dir / "twice.onnx"));
  CHECK(report["attributes_written"] == 0);
  auto shown = run(graphrwBin() + " inspect " + (dir / "once.onnx").string());
  CHECK_THAT(shown.out,
             Catch::Contains("placement:\n  stage 0: 3 nodes\n  stage 1: 2 nodes\n  ipu 0: 3 nodes\n  ipu 1: 2 nodes"));
}

TEST_CASE("place: unmatched nodes follow their latest producer, or their first consumer", "[place]") {
  auto m = parseModel(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[2, 3] x, float[2, 3] z) => (float[2, 3] y) {
  a = Relu (x)
  b = Tanh (z)
  s = Add (a, b)
  y = Sigmoid (s)
}
)");
  const char* names[] = {"/l0/relu", "/l1/tanh", "/add", "/out"};
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  auto out = runPass(m, passes::createPlacePass(stages({"scope=/l0/", "scope=/l1/"})));
  for (const auto& n : out->graph().nodes()) {
    INFO(n->name());
    int64_t want = n->name() == "/l0/relu" ? 0 : 1;  // Add reads stages 0 and 1: the later; Sigmoid follows it
    CHECK(intAttr(*n, "__pipeline_stage") == want);
    CHECK(intAttr(*n, "__ipu_number") == want);  // default: stage i on IPU i
  }
}

TEST_CASE("place: errors name the selector, the node and the edge", "[place]") {
  CHECK_THROWS_WITH(runPass(chain(), passes::createPlacePass(stages({"scope=/l0/", "scope=/nothing/"}))),
                    Catch::Contains("stage 1: selector 'scope=/nothing/' matched no node"));
  CHECK_THROWS_WITH(runPass(chain(), passes::createPlacePass(stages({"scope=/l0/", "op_type=Relu"}))),
                    Catch::Contains("is matched by stage 0 ('scope=/l0/') and by stage 1 ('op_type=Relu')"));
  // The head before the layer it reads: an edge from a later stage.
  CHECK_THROWS_WITH(
      runPass(chain(), passes::createPlacePass(stages({"scope=/head/", "scope=/l0/"}))),
      Catch::Contains("node '/head/sigmoid' (ai.onnx::Sigmoid) in stage 0 reads 'd' from node '/l1/tanh'"));
  CHECK_THROWS_WITH(runPass(chain(), passes::createPlacePass(stages({"scope=/l0/"}, {0, 1}))),
                    Catch::Contains("2 IPUs given for 1 stage"));
}

TEST_CASE("place: what an If's branch reads from the main graph counts as the If's input", "[place][hostile]") {
  auto m = parseModel(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (bool c, float[2] x) => (float[2] y) {
  a = Relu (x)
  late = Neg (x)
  y = If (c) <then_branch = t () => (float[2] tv) { tv = Abs (late) },
      else_branch = e () => (float[2] ev) { ev = Abs (a) }>
}
)");
  const char* names[] = {"/l0/relu", "/l1/neg", "/l0/if"};
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  // Selected into stage 0, its then-branch reading the stage-1 Neg: PopART would run it before 'late' exists.
  CHECK_THROWS_WITH(runPass(m, passes::createPlacePass(stages({"name=/l0/relu|name=/l0/if", "name=/l1/neg"}))),
                    Catch::Contains("node '/l0/if' (ai.onnx::If) in stage 0 reads 'late' from node '/l1/neg'") &&
                        Catch::Contains("in the later stage 1"));
  // Unselected, it follows what its branches read into stage 1.
  auto out = runPass(m, passes::createPlacePass(stages({"name=/l0/relu", "name=/l1/neg"})));
  for (const auto& n : out->graph().nodes())
    if (n->name() == "/l0/if") CHECK(intAttr(*n, "__pipeline_stage") == 1);
}

TEST_CASE("place: sharding writes only __ipu_number, one IPU for all", "[place]") {
  auto o = stages({"scope=/l0/", "scope=/l1/|scope=/head/"}, {0, 1});
  o.pipeline = false;
  auto m = runPass(chain(), passes::createPlacePass(o));
  for (const auto& n : m->graph().nodes()) {
    CHECK_FALSE(n->attribute("__pipeline_stage"));
    CHECK(n->attribute("__ipu_number"));
  }
  passes::PlaceOptions one;
  one.ipus = {3};
  auto all = runPass(chain(), passes::createPlacePass(one));
  for (const auto& n : all->graph().nodes()) CHECK(intAttr(*n, "__ipu_number") == 3);
}

TEST_CASE("place: after the PopART rule file, Calls and their callees are placed consistently", "[place][popart]") {
  fs::path path = fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch" / "bert-opset17.onnx";
  auto model = loadModel(path.string());
  PassManager pm({true, std::nullopt, ""});
  pm.add(exportShapes(*model));
  for (auto& p : loadRules((fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "popart.rules.json").string()).passes)
    pm.add(p);
  pm.add(passes::createPlacePass(
      stages({"scope=/words/|scope=/positions/|scope=/ln/|scope=/layers.0", "scope=/layers.1"}, {0, 1})));
  auto report = pm.run(*model);
  INFO(report.dump());
  size_t calls = 0;
  for (const auto& n : model->graph().nodes()) {
    if (n->opType() != "Call") continue;
    ++calls;
    int64_t want = n->name() == "/layers.0" ? 0 : 1;
    CHECK(intAttr(*n, "__pipeline_stage") == want);
    for (const auto& inner : n->attribute("callee")->g()->nodes()) {
      CHECK(intAttr(*inner, "__pipeline_stage") == want);
      CHECK(intAttr(*inner, "__ipu_number") == want);
    }
  }
  CHECK(calls == 2);
  // One callee per placement: PopART runs a callee where its Call runs, and knows callees by name.
  std::set<std::string> callees;
  for (const auto& n : model->graph().nodes())
    if (n->opType() == "Call") callees.insert(n->attribute("callee")->g()->residual().name());
  CHECK(callees == std::set<std::string>{"layers", "layers_stage1"});
  std::string findings;
  for (const auto& f : popart::checkImport(*model)) findings += f.check + ": " + f.where + ": " + f.message + "\n";
  INFO(findings);
  CHECK(findings.empty());
}

namespace {

// A tied head: the embedding table E is read by the first stage's Gather and
// the last stage's MatMul (the MLM head), as PyTorch exports a tied BERT.
onnx::ModelProto tiedHead() {
  auto m = parseModel(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (int64[2] ids) => (float[2, 5] y) <float[5, 3] E = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}> {
  h = Gather (E, ids)
  a = Relu (h)
  b = Tanh (a)
  c = Sigmoid (b)
  Et = Transpose (E)
  y = MatMul (c, Et)
}
)");
  const char* names[] = {"/embeddings/Gather", "/layer.0/Relu",   "/layer.1/Tanh",
                         "/layer.2/Sigmoid",   "/head/Transpose", "/head/MatMul"};
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  return m;
}

}  // namespace

TEST_CASE("place refuses a weight read on two IPUs while pipelining, and says which --ipus would do",
          "[place][training]") {
  auto m = tiedHead();
  auto four = stages({"scope=/embeddings/", "scope=/layer.0/", "scope=/layer.1/", "scope=/layer.2/|scope=/head/"});
  try {
    runPass(m, passes::createPlacePass(four));
    FAIL("placed");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(e.what(), Catch::Contains("weight 'E' is read by") && Catch::Contains("'/embeddings/Gather'") &&
                             Catch::Contains("'/head/Transpose'") && Catch::Contains("(stage 0, IPU 0)") &&
                             Catch::Contains("(stage 3, IPU 3)") && Catch::Contains("pipeline.cpp:142") &&
                             Catch::Contains("--ipus 0,1,2,0"));
  }
  // What it suggests places the model, and PopART's import would take it.
  auto suggested = four;
  suggested.ipus = {0, 1, 2, 0};
  auto placed = runPass(m, passes::createPlacePass(suggested));
  INFO(toProto(*placed).DebugString());
  CHECK(popart::checkImport(*placed).empty());
  // Without pipelining (sharding) a weight may be read on two IPUs.
  auto sharded = four;
  sharded.pipeline = false;
  CHECK_NOTHROW(runPass(m, passes::createPlacePass(sharded)));
}

TEST_CASE("place and checkpoint --mode recompute refuse each other, in either order", "[place][checkpoint][training]") {
  // Recompute marks, then pipeline stages.
  auto marked = chain();
  for (auto& n : *marked.mutable_graph()->mutable_node()) {
    auto* a = n.add_attribute();
    a->set_name("__recompute_output_in_backward_pass");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(2);
  }
  try {
    runPass(marked, passes::createPlacePass(stages({"scope=/l0/", "scope=/l1/"})));
    FAIL("placed");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(e.what(), Catch::Contains("marked Recompute") && Catch::Contains("pipeline.cpp:1344"));
  }
  // Pipeline stages, then Recompute marks.
  auto placed = runPass(chain(), passes::createPlacePass(stages({"scope=/l0/", "scope=/l1/"})));
  passes::CheckpointOptions recompute;
  recompute.after = sel("scope=/l0/");
  recompute.mode = passes::CheckpointOptions::Mode::Recompute;
  try {
    runPass(toProto(*placed), passes::createCheckpointPass(recompute));
    FAIL("marked");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(e.what(), Catch::Contains("placed in pipeline stages") && Catch::Contains("pipeline.cpp:1344"));
  }
  // Checkpoints are what pipelining takes.
  passes::CheckpointOptions checkpoint;
  checkpoint.after = sel("scope=/l0/");
  auto checkpointed = runPass(toProto(*placed), passes::createCheckpointPass(checkpoint));
  CHECK(popart::checkImport(*checkpointed).empty());
}

TEST_CASE("place --untie: parameters PyTorch merged for equal values get their own copy, a real tie stays one",
          "[place][training][pytorch]") {
  fs::path dir = fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch";
  // An eval export: every LayerNorm weight of the untrained model is ones, so
  // PyTorch kept 'ln.weight' and wrote the others as Identity nodes named after them.
  auto original = readProto(dir / "bert-opset15.onnx");
  passes::LegalizeOptions legal;
  legal.dims = {{"batch", 2}, {"sequence", 8}};
  auto legalized = toProto(*runPass(original, passes::createLegalizePass(legal)));
  auto two = stages({"scope=/layers.0/", "scope=/layers.1/"});
  try {
    runPass(legalized, passes::createPlacePass(two));
    FAIL("placed");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(e.what(),
               Catch::Contains("weight 'ln.") && Catch::Contains("ai.onnx::Identity") && Catch::Contains("--untie"));
  }
  auto untie = two;
  untie.untie = true;
  nlohmann::json report;
  auto placed = runPass(legalized, passes::createPlacePass(untie), &report);
  INFO(report.dump());
  CHECK(report["untied"].size() == 8);
  CHECK(report["untied"]["layers.1.ln2.weight"] == "ln.weight");
  CHECK(popart::checkImport(*placed).empty());
  auto out = toProto(*placed);
  std::map<std::string, std::string> bytes;
  for (const auto& t : out.graph().initializer()) bytes[t.name()] = readTensor(ir::Tensor(t)).data;
  for (const auto& [name, from] : report["untied"].items()) {
    INFO(name);
    REQUIRE(bytes.count(name));
    CHECK(bytes[name] == bytes.at(from.get<std::string>()));
  }
  CHECK(countOp(out, "Identity") == 0);
  checkSameMaths(original, mapBack(*placed), 1e-4, 40);

  // A training export ties the MLM decoder to the word embedding with one
  // tensor, no Identity: --untie leaves it, and splitting it is still refused.
  auto mlm = toProto(*runPass(readProto(dir / "bert-mlm-train-opset15.onnx"), passes::createLegalizePass({})));
  auto split = stages({"scope=/bert/embeddings/", "scope=/bert/encoder/", "scope=/cls/"});
  split.untie = true;
  try {
    runPass(mlm, passes::createPlacePass(split));
    FAIL("placed");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("weight 'bert.embeddings.word_embeddings.weight' is read by") &&
                             Catch::Contains("--ipus 0,1,0") && !Catch::Contains("--untie"));
  }
}
