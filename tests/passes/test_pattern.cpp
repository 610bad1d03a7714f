// pattern: declarative multi-node rewrites, and the shipped rule library
// (examples/patterns/*.rules.json) on PyTorch exports, under ONNX Runtime.
#include <catch2/catch.hpp>

#include <filesystem>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/fold/fold.h"
#include "passes/opset/opset.h"
#include "passes/pattern/pattern.h"
#include "passes/replace/replace.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/check.h"

namespace fs = std::filesystem;
using namespace graphrw;
using namespace graphrw::test;

namespace {

fs::path root() { return GRAPHRW_SOURCE_DIR; }

nlohmann::json runRuleFile(ir::Model& model, const std::string& name) {
  PassManager pm({true, std::nullopt, ""});
  for (auto& p : loadRules((root() / "examples" / "patterns" / (name + ".rules.json")).string()).passes) pm.add(p);
  auto report = pm.run(model);
  return report.is_array() ? report : report["passes"];
}

size_t matched(const nlohmann::json& passReport) {
  size_t n = 0;
  for (const auto& r : passReport["rules"]) n += r["matched"].get<size_t>();
  return n;
}

std::map<std::string, size_t> ops(ir::Model& m) {
  std::map<std::string, size_t> c;
  for (const auto& n : m.graph().nodes()) c[n->opType()]++;
  return c;
}

}  // namespace

TEST_CASE("pattern library on PyTorch exports: GELU and q/k/v fusion match every layer and keep the outputs",
          "[pattern][pytorch]") {
  for (const char* name : {"bert-opset15", "bert-opset17", "gpt-opset17"}) {
    INFO(name);
    fs::path path = root() / "tests" / "models" / "pytorch" / (std::string(name) + ".onnx");
    auto original = readProto(path);
    auto model = loadModel(path.string());
    PassManager fold({true, std::nullopt, ""});
    fold.add(passes::createFoldPass({}));  // the weights' Transposes become initializers
    fold.run(*model);

    auto qkv = runRuleFile(*model, "qkv-fusion");
    CHECK(matched(qkv[0]) == 2);  // one per layer, none overlapping
    CHECK(qkv[0]["weights_folded"] == 4);  // the [H, 3H] weights and the [3H] biases of each layer
    auto afterQkv = ops(*model);
    CHECK(afterQkv["Split"] == 2);
    checkSameMaths(original, *model, 1e-5, 40);

    auto gelu = runRuleFile(*model, "gelu");
    CHECK(matched(gelu[0]) == 2);
    CHECK(ops(*model)["GeluErf"] == 2);
    CHECK(ops(*model).count("Erf") == 0);
    checkValid(*model);
    checkSameMaths(original, mapBack(*model), 1e-5, 40);
  }
}

TEST_CASE("pattern library: Dropout removed with one or two outputs, the tanh GELU", "[pattern]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2, 4] x) => (float[2, 4] y1, float[2, 4] y2, float[2, 4] y3, float[2, 4] y4, bool[2, 4] kept) {
  r = Constant <value = float {0.1}> ()
  t = Constant <value = bool {0}> ()
  y1 = Dropout (x)
  y2, unused = Dropout (x, r)
  y3, kept = Dropout (x, r, t)
  three = Constant <value = float {3.0}> ()
  p = Pow (x, three)
  c = Constant <value = float {0.044715}> ()
  cp = Mul (p, c)
  inner = Add (x, cp)
  k = Constant <value = float {0.7978845608}> ()
  ki = Mul (inner, k)
  th = Tanh (ki)
  one = Constant <value = float {1.0}> ()
  a = Add (th, one)
  half = Constant <value = float {0.5}> ()
  h = Mul (x, half)
  y4 = Mul (h, a)
}
)");
  auto model = loadModel(m);
  auto drop = runRuleFile(*model, "dropout");
  // The third Dropout's mask is a graph output: it stays.
  CHECK(matched(drop[0]) == 2);
  CHECK(ops(*model)["Dropout"] == 1);
  auto gelu = runRuleFile(*model, "gelu");
  CHECK(ops(*model)["Gelu"] == 1);
  CHECK(ops(*model).count("Tanh") == 0);
  checkValid(*model);
  checkSameMaths(m, mapBack(*model), 1e-5);
}

TEST_CASE("pattern: constraints, the CLI with a rules file and --dry-run", "[pattern][cli]") {
  TempDir dir;
  writeProto(parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2, 4] x, float[4, 4] act) => (float[2, 4] y, float[2, 4] z) <float[4, 4] w = {1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
    0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0}> {
  y = MatMul (x, w)
  z = MatMul (x, act)
}
)"),
             dir / "m.onnx");
  nlohmann::json rules = {
      {"rules",
       {{{"match", "<domain: \"p\", opset_import: [\"\" : 14]>\nM (a, b) => (c) { c = MatMul (a, b) }\n"},
         {"replace",
          "<domain: \"p\", opset_import: [\"\" : 14]>\nM (a, b) => (c) {\n  t = Transpose (b)\n  u = Transpose (t)\n  "
          "c = MatMul (a, u)\n}\n"},
         {"weights", {"b"}}}}}};
  writeFile(dir / "rules.json", rules.dump());
  std::string base =
      graphrwBin() + " pattern " + (dir / "m.onnx").string() + " --rules " + (dir / "rules.json").string();
  auto dry = run(base + " --dry-run --report -");
  REQUIRE(dry.status == 0);
  auto report = nlohmann::json::parse(dry.out);
  const auto& pass = report["passes"][0];
  CHECK(pass["rules"][0]["matched"] == 1);  // only the MatMul on a weight
  CHECK(pass["rules"][0]["at"][0] == "the node producing 'y' (ai.onnx::MatMul)");
  CHECK(pass["weights_folded"] == 2);  // Transpose of Transpose of the weight, folded
  CHECK_FALSE(fs::exists(dir / "m.patterned.onnx"));
  auto written = run(base + " -o " + (dir / "out.onnx").string());
  CHECK(written.status == 0);
  auto out = readProto(dir / "out.onnx");
  size_t transposes = 0;
  for (const auto& n : out.graph().node()) transposes += n.op_type() == "Transpose";
  CHECK(transposes == 0);
  // A constraint naming no input, and a bad rules file, are usage errors.
  nlohmann::json bad = rules;
  bad["rules"][0]["weights"] = {"nope"};
  writeFile(dir / "bad.json", bad.dump());
  auto e = run(graphrwBin() + " pattern " + (dir / "m.onnx").string() + " --rules " + (dir / "bad.json").string());
  CHECK(e.status == 2);
  CHECK_THAT(e.err, Catch::Contains("constraint names 'nope', which is not an input of the match"));
  writeFile(dir / "notrules.json", "{\"rule\": []}");
  e = run(graphrwBin() + " pattern " + (dir / "m.onnx").string() + " --rules " + (dir / "notrules.json").string());
  CHECK(e.status == 2);
  CHECK_THAT(e.err, Catch::Contains("is not JSON of the form"));
}

TEST_CASE("pattern library: the decomposed LayerNorm to PopART's GroupNormalization, and to LayerNormalization-17",
          "[pattern][pytorch]") {
  fs::path path = root() / "tests" / "models" / "pytorch" / "bert-opset15.onnx";
  auto original = readProto(path);
  auto model = loadModel(path.string());
  PassManager fold({true, std::nullopt, ""});
  fold.add(passes::createFoldPass({}));
  fold.run(*model);
  TempDir dir;
  writeModel(*model, (dir / "folded.onnx").string());

  auto ln = runRuleFile(*model, "layernorm");
  CHECK(matched(ln[0]) == 5);  // the embeddings' and two per layer
  CHECK(ops(*model)["GroupNormalization"] == 5);
  CHECK(ops(*model).count("ReduceMean") == 0);
  CHECK(ops(*model).count("Sqrt") == 0);
  for (const auto& n : model->graph().nodes())
    if (n->opType() == "GroupNormalization") CHECK(n->attribute("epsilon")->proto().f() == Approx(1e-5f));
  checkValid(*model);
  checkSameMaths(original, mapBack(*model), 1e-4, 40);

  // At opset 17: ONNX's own op, epsilon from the matched constant.
  auto at17 = loadModel((dir / "folded.onnx").string());
  PassManager up({true, std::nullopt, ""});
  up.add(passes::createOpsetPass({17, std::nullopt}));
  up.run(*at17);
  auto ln17 = runRuleFile(*at17, "layernorm-onnx17");
  CHECK(matched(ln17[0]) == 5);
  CHECK(ops(*at17)["LayerNormalization"] == 5);
  checkValid(*at17);
  checkSameMaths(original, *at17, 1e-4, 40);
}

TEST_CASE(
    "pattern library on a 3-layer BERT-style export: 3 GELU, 7 LayerNorm (6 in the layers), 3 q/k/v, none overlapping",
    "[pattern][pytorch]") {
  fs::path path = root() / "tests" / "models" / "pytorch" / "bert3-opset15.onnx";
  auto original = readProto(path);
  auto model = loadModel(path.string());
  PassManager fold({true, std::nullopt, ""});
  fold.add(passes::createFoldPass({}));
  fold.run(*model);
  CHECK(matched(runRuleFile(*model, "qkv-fusion")[0]) == 3);
  CHECK(matched(runRuleFile(*model, "gelu")[0]) == 3);
  auto ln = runRuleFile(*model, "layernorm")[0];
  CHECK(matched(ln) == 7);
  size_t inLayers = 0;
  for (const auto& at : ln["rules"][0]["at"]) inLayers += at.get<std::string>().find("/layers.") != std::string::npos;
  CHECK(inLayers == 6);
  checkValid(*model);
  checkSameMaths(original, mapBack(*model), 1e-5, 40);
}

TEST_CASE("seed case 10: examples/ipu-bert-pretraining.rules.json on a 4-layer BERT, 4 stages on 4 IPUs",
          "[pattern][place][popart]") {
  TempDir dir;
  REQUIRE(run(std::string(GRAPHRW_GEN_BERT) + " -o " + (dir / "bert4.onnx").string() + " --layers 4 --seq 16 --batch 1")
              .status == 0);
  auto original = readProto(dir / "bert4.onnx");
  auto model = loadModel((dir / "bert4.onnx").string());
  PassManager pm({true, std::nullopt, ""});
  for (auto& p : loadRules((root() / "examples" / "ipu-bert-pretraining.rules.json").string()).passes) pm.add(p);
  auto report = pm.run(*model);
  const auto& passes = report.is_array() ? report : report["passes"];
  INFO(passes.dump());
  CHECK(matched(passes[1]) == 4);  // q/k/v fused in every layer
  CHECK(passes[2]["checkpoints_added"] == 4);
  std::string findings;
  for (const auto& f : popart::checkImport(*model)) findings += f.check + ": " + f.where + ": " + f.message + "\n";
  INFO(findings);
  CHECK(findings.empty());
  // Each layer's Call on its own stage and IPU, its callee's ops with it.
  for (const auto& n : model->graph().nodes()) {
    if (n->opType() != "Call") continue;
    int64_t layer = n->name().view().back() - '0';
    CHECK(n->attribute("__pipeline_stage")->proto().i() == layer);
    CHECK(n->attribute("__ipu_number")->proto().i() == layer);
    for (const auto& inner : n->attribute("callee")->g()->nodes())
      CHECK(inner->attribute("__ipu_number")->proto().i() == layer);
  }
  checkSameMaths(original, mapBack(*model), 1e-4, 2);
}

TEST_CASE("pattern library: q/k/v fusion without biases, a weight shared by two matches folded once", "[pattern]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2, 4] x, float[2, 4] z) => (float[2, 4] q, float[2, 4] k, float[2, 4] v, float[2, 4] q2, float[2, 4] k2,
    float[2, 4] v2)
  <float[4, 4] wq = {1.0, 2.0, 0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0, 1.0, 3.0, 1.0, 0.0, 0.0, 1.0},
   float[4, 4] wk = {0.5, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.5},
   float[4, 4] wv = {0.0, 1.0, 1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 2.0, 0.0, 3.0, 1.0, 0.0}> {
  q = MatMul (x, wq)
  k = MatMul (x, wk)
  v = MatMul (x, wv)
  q2 = MatMul (z, wq)
  k2 = MatMul (z, wk)
  v2 = MatMul (z, wv)
}
)");
  auto model = loadModel(m);
  auto report = runRuleFile(*model, "qkv-fusion");
  INFO(report.dump());
  CHECK(matched(report[0]) == 2);
  CHECK(report[0]["weights_folded"] == 2);  // each match's Concat is folded...
  CHECK(report[0]["initializers_created"] == 1);  // ...into one new initializer: the same weights, computed once
  CHECK(report[0]["initializers_removed"] == 3);  // wq, wk, wv: nothing reads them any more
  CHECK(ops(*model)["MatMul"] == 2);
  CHECK(ops(*model)["Split"] == 2);
  checkValid(*model);
  checkSameMaths(m, *model, 1e-5);
}

TEST_CASE("pattern library as shipped on the command line: alternatives, every opset it claims, repeated --rules",
          "[pattern][cli][pytorch]") {
  fs::path models = root() / "tests" / "models" / "pytorch", lib = root() / "examples" / "patterns";
  auto q = [](const fs::path& p) { return "'" + p.string() + "'"; };
  TempDir dir;
  // gelu: one of its four alternative forms is in each export: exit 0, at every opset.
  for (const char* m : {"bert-opset13", "bert-opset14", "bert-opset15", "bert-opset17", "gpt-opset14", "gpt-opset17"}) {
    INFO(m);
    auto r = run(graphrwBin() + " pattern " + q(models / (std::string(m) + ".onnx")) + " --rules " +
                 q(lib / "gelu.rules.json") + " -o " + q(dir / "g.onnx"));
    CHECK(r.status == 0);
    CHECK(r.err.find("matched nothing") == std::string::npos);  // the forms a model lacks are not even warnings
  }
  // layernorm: every decomposed LayerNorm at 13, 14 and 15 (the Identity PyTorch feeds the
  // merged weights through is looked through), no fold first; the same maths.
  for (auto [m, n] : {std::pair{"bert-opset13", 5}, {"bert-opset14", 5}, {"bert-opset15", 5}, {"bert3-opset15", 7}}) {
    INFO(m);
    fs::path in = models / (std::string(m) + ".onnx"), out = dir / (std::string(m) + ".ln.onnx");
    auto r = run(graphrwBin() + " pattern " + q(in) + " --rules " + q(lib / "layernorm.rules.json") + " -o " + q(out) +
                 " --report " + q(dir / "r.json"));
    REQUIRE(r.status == 0);
    auto report = nlohmann::json::parse(readFile(dir / "r.json"));
    CHECK(report["passes"][0]["rules"][0]["matched"] == n);
    auto written = readProto(out);
    CHECK(countOp(written, "GroupNormalization") == static_cast<size_t>(n));
    checkSameMaths(readProto(in), mapBack(*loadModel(out.string())), 1e-5, 40);
  }
  // dropout on a training export, and --rules repeated: both libraries apply.
  auto r = run(graphrwBin() + " pattern " + q(models / "bert-mlm-train-opset15.onnx") + " --rules " +
               q(lib / "dropout.rules.json") + " --rules " + q(lib / "gelu.rules.json") + " -o " + q(dir / "d.onnx") +
               " --report " + q(dir / "d.json"));
  REQUIRE(r.status == 0);
  auto both = nlohmann::json::parse(readFile(dir / "d.json"))["passes"][0]["rules"];
  size_t dropouts = 0, gelus = 0;
  for (const auto& rule : both)
    (rule["rule"].get<std::string>().starts_with("Dropout") ? dropouts : gelus) += rule["matched"].get<size_t>();
  CHECK(dropouts == 25);
  CHECK(gelus == 13);
  CHECK(countOp(readProto(dir / "d.onnx"), "Dropout") == 0);
  // A library none of whose alternatives matches is an error naming it (exit 2), a warning with --allow-no-match.
  r = run(graphrwBin() + " pattern " + q(models / "resnet-opset15.onnx") + " --rules " + q(lib / "gelu.rules.json") +
          " -o " + q(dir / "x.onnx"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("gelu.rules.json: /passes/0: none of its 4 alternative rules matched"));
  CHECK_FALSE(fs::exists(dir / "x.onnx"));
  r = run(graphrwBin() + " pattern " + q(models / "resnet-opset15.onnx") + " --rules " + q(lib / "gelu.rules.json") +
          " --allow-no-match -o " + q(dir / "x.onnx"));
  CHECK(r.status == 0);
}

TEST_CASE("pattern: a rule's own allow_no_match, and rules outside a library still each must match", "[pattern]") {
  TempDir dir;
  auto model = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[2] y) { y = Relu(x) }
)");
  const char* rules = R"({"rules": [
    {"match": "<domain: \"p\", opset_import: [\"\" : 13]>\nR (x) => (y) { y = Relu (x) }",
        "replace": "<domain: \"p\", opset_import: [\"\" : 13]>\nR (x) => (y) { y = Sigmoid (x) }"},
    {"match": "<domain: \"p\", opset_import: [\"\" : 13]>\nT (x) => (y) { y = Tanh (x) }",
        "replace": "<domain: \"p\", opset_import: [\"\" : 13]>\nT (x) => (y) { y = Relu (x) }"ALLOW}
  ]})";
  std::string strict = rules, lenient = rules;
  strict.replace(strict.find("ALLOW"), 5, "");
  lenient.replace(lenient.find("ALLOW"), 5, ", \"allow_no_match\": true");
  writeFile(dir / "strict.json", strict);
  writeFile(dir / "lenient.json", lenient);
  writeProto(model, dir / "m.onnx");
  auto r = run(graphrwBin() + " pattern '" + (dir / "m.onnx").string() + "' --rules '" +
               (dir / "strict.json").string() + "' -o -");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("/rules/1: rule 'T' matched nothing"));
  r = run(graphrwBin() + " pattern '" + (dir / "m.onnx").string() + "' --rules '" + (dir / "lenient.json").string() +
          "' -o '" + (dir / "o.onnx").string() + "'");
  CHECK(r.status == 0);
  CHECK(countOp(readProto(dir / "o.onnx"), "Sigmoid") == 1);
}

TEST_CASE("pattern: a later rule matches what an earlier rule's replacement made, once per node, in every graph",
          "[pattern]") {
  TempDir dir;
  // Two chains in the main graph and one in an If branch: rule A turns Abs -> Neg into Relu, rule B that Relu
  // into Sigmoid, rule C finds Abs (gone: A's matches are erased, not left for later rules).
  auto model = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x, bool c) => (float[2] y, float[2] z, float[2] w) {
  a1 = Abs (x)
  y = Neg (a1)
  a2 = Abs (y)
  z = Neg (a2)
  w = If (c) <then_branch = t () => (float[2] o) { a3 = Abs (x)  o = Neg (a3) },
              else_branch = e () => (float[2] o) { o = Identity (x) }>
}
)");
  const char* rules = R"({"rules": [
    {"match": "<domain: \"p\", opset_import: [\"\" : 13]>\nA (x) => (y) { a = Abs (x)  y = Neg (a) }",
        "replace": "<domain: \"p\", opset_import: [\"\" : 13]>\nA (x) => (y) { y = Relu (x) }"},
    {"match": "<domain: \"p\", opset_import: [\"\" : 13]>\nB (x) => (y) { y = Relu (x) }",
        "replace": "<domain: \"p\", opset_import: [\"\" : 13]>\nB (x) => (y) { y = Sigmoid (x) }"},
    {"match": "<domain: \"p\", opset_import: [\"\" : 13]>\nC (x) => (y) { y = Abs (x) }",
        "replace": "<domain: \"p\", opset_import: [\"\" : 13]>\nC (x) => (y) { y = Tanh (x) }", "allow_no_match": true}
  ]})";
  writeFile(dir / "rules.json", rules);
  writeProto(model, dir / "m.onnx");
  auto r = run(graphrwBin() + " pattern '" + (dir / "m.onnx").string() + "' --rules '" + (dir / "rules.json").string() +
               "' -o '" + (dir / "o.onnx").string() + "' --report '" + (dir / "r.json").string() + "'");
  REQUIRE(r.status == 0);
  auto out = readProto(dir / "o.onnx");
  CHECK(countOp(out, "Sigmoid") == 2);
  CHECK(countOp(out, "Relu") == 0);
  CHECK(countOp(out, "Abs") == 0);
  CHECK(countOp(out, "Tanh") == 0);
  const onnx::GraphProto* branch = nullptr;
  for (const auto& n : out.graph().node())
    if (n.op_type() == "If") branch = &n.attribute(0).g();
  REQUIRE(branch);
  REQUIRE(branch->node_size() == 1);
  CHECK(branch->node(0).op_type() == "Sigmoid");
  auto report = nlohmann::json::parse(readFile(dir / "r.json"));
  const auto& details = report["passes"][0]["rules"];
  CHECK(details[0]["matched"] == 3);
  CHECK(details[1]["matched"] == 3);
  CHECK(details[2]["matched"] == 0);
  CHECK(run(graphrwBin() + " validate '" + (dir / "o.onnx").string() + "'").status == 0);
}

TEST_CASE("pattern: the report names the first 1,000 matches of a rule and counts the rest", "[pattern]") {
  // 1,003 Abs -> Neg pairs in a chain.
  std::string text =
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[4] x) => (float[4] y) {\n  v0 = Identity (x)\n";
  const int pairs = 1003;
  for (int i = 0; i < pairs; ++i)
    text += "  a" + std::to_string(i) + " = Abs (v" + std::to_string(i) + ")\n  v" + std::to_string(i + 1) +
            " = Neg (a" + std::to_string(i) + ")\n";
  text += "  y = Identity (v" + std::to_string(pairs) + ")\n}\n";
  auto model = loadModel(parseModel(text));
  TempDir dir;
  nlohmann::json rules = {
      {"version", 1},
      {"passes",
       {{{"pass", "pattern"},
         {"rules",
          {{{"match",
             "<domain: \"b\", opset_import: [\"\" : 17]>\nAbsNeg (x) => (y) {\n  a = Abs (x)\n  y = Neg (a)\n}\n"},
            {"replace",
             "<domain: \"b\", opset_import: [\"\" : 17]>\nNegAbs (x) => (y) {\n  a = Neg (x)\n  y = Abs "
             "(a)\n}\n"}}}}}}}};
  writeFile(dir / "rules.json", rules.dump());
  PassManager pm({true, std::nullopt, ""});
  for (auto& p : loadRules((dir / "rules.json").string()).passes) pm.add(p);
  auto report = pm.run(*model);
  const auto& rule = (report.is_array() ? report : report["passes"])[0]["rules"][0];
  CHECK(rule["matched"] == pairs);
  CHECK(rule["at"].size() == 1000);
  CHECK(rule["at"][0] == "the node producing 'v1' (ai.onnx::Neg)");
  CHECK(rule["at_omitted"] == pairs - 1000);
  CHECK(ops(*model)["Abs"] == pairs);
}
