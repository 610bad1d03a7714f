// End-to-end: the built graphrw binary on files, pipes and exit codes.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "driver/batch.h"
#include "models.h"
#include "support.h"

namespace fs = std::filesystem;
using graphrw::test::run;

namespace {

std::string bin() { return graphrw::test::graphrwBin(); }
std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

fs::path smallModel(const graphrw::test::TempDir& dir) {
  auto proto = graphrw::test::parseModel(graphrw::test::kSmallModel);
  graphrw::test::toRawData(proto);
  graphrw::test::writeProto(proto, dir / "m.onnx");
  return dir / "m.onnx";
}

}  // namespace

TEST_CASE("version, help and usage errors", "[cli]") {
  auto v = run(bin() + " --version");
  CHECK(v.status == 0);
  CHECK_THAT(v.out, Catch::StartsWith("graphrw "));
  for (const char* cmd : {"", " inspect", " convert", " validate"}) {
    auto h = run(bin() + cmd + " --help");
    CHECK(h.status == 0);
    CHECK_THAT(h.out, Catch::Contains("Usage"));
  }
  auto none = run(bin());
  CHECK(none.status == 2);
  auto missing = run(bin() + " convert");
  CHECK(missing.status == 2);
  CHECK(lines(missing.err) == 1);
  CHECK_THAT(missing.err, Catch::StartsWith("graphrw: error:"));
  auto unknown = run(bin() + " inspect x.onnx --bogus");
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.err, Catch::Contains("--bogus"));
}

TEST_CASE("inspect reports ops, functions, weights and PopART attributes", "[cli]") {
  graphrw::test::TempDir dir;
  auto proto = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
main (float[2,4] X) => (float[2,4] Y) <float[4,4] W = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}> {
  H = MatMul <__ipu_number = 0> (X, W)
  A = local.Layer (H)
  Y = local.Layer <__ipu_number = 1> (A)
}
<domain: "local", opset_import: ["" : 17]>
Layer (x) => (y) {
  y = Relu <__recompute_output_in_backward_pass = 2> (x)
}
)");
  graphrw::test::writeProto(proto, dir / "m.onnx");
  auto r = run(bin() + " inspect --json " + q(dir / "m.onnx"));
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["ir_version"] == 8);
  CHECK(j["graph"]["nodes"] == 3);
  REQUIRE(j["functions"].size() == 1);
  CHECK(j["functions"][0]["name"] == "Layer");
  CHECK(j["functions"][0]["calls"] == 2);
  CHECK(j["initializers"]["count"] == 1);
  CHECK(j["initializers"]["bytes"] == 64);
  bool sawIpu = false, sawRecompute = false;
  for (const auto& a : j["popart_attributes"]) {
    if (a["name"] == "__ipu_number") {
      sawIpu = true;
      CHECK(a["type"] == "INT");
      CHECK(a["count"] == 2);
    }
    if (a["name"] == "__recompute_output_in_backward_pass") sawRecompute = true;
  }
  CHECK(sawIpu);
  CHECK(sawRecompute);
  auto text = run(bin() + " inspect " + q(dir / "m.onnx"));
  CHECK(text.status == 0);
  CHECK_THAT(text.out, Catch::Contains("local::Layer  1 nodes, 2 calls"));
}

TEST_CASE("convert: default output name, never the input, identical bytes", "[cli]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir);
  std::string before = graphrw::test::readFile(m);
  auto r = run(bin() + " convert " + q(m));
  REQUIRE(r.status == 0);
  CHECK(graphrw::test::readFile(dir / "m.converted.onnx") == before);
  CHECK(graphrw::test::readFile(m) == before);
  CHECK(r.out.empty());  // stdout stays clean for data

  auto same = run(bin() + " convert " + q(m) + " -o " + q(m));
  CHECK(same.status == 2);
  CHECK_THAT(same.err, Catch::Contains("refusing to overwrite the input"));
  CHECK(graphrw::test::readFile(m) == before);
}

TEST_CASE("bad input: one line, exit 3, existing output untouched", "[cli][errors]") {
  graphrw::test::TempDir dir;
  graphrw::test::writeFile(dir / "broken.onnx", "this is not a model");
  graphrw::test::writeFile(dir / "out.onnx", "keep me");
  auto r = run(bin() + " convert " + q(dir / "broken.onnx") + " -o " + q(dir / "out.onnx"));
  CHECK(r.status == 3);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::Contains("broken.onnx") && Catch::Contains("not an ONNX model"));
  CHECK(graphrw::test::readFile(dir / "out.onnx") == "keep me");
  auto missing = run(bin() + " inspect " + q(dir / "absent.onnx"));
  CHECK(missing.status == 3);
  CHECK_THAT(missing.err, Catch::Contains("absent.onnx"));
  size_t files = 0;
  for (auto it = fs::directory_iterator(dir.path()); it != fs::directory_iterator(); ++it) ++files;
  CHECK(files == 2);
}

TEST_CASE("stdin and stdout pipelines", "[cli]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir);
  auto r = run("cat " + q(m) + " | " + bin() + " convert - -o - | " + bin() + " convert - -o " + q(dir / "out.onnx"));
  REQUIRE(r.status == 0);
  CHECK(graphrw::test::readFile(dir / "out.onnx") == graphrw::test::readFile(m));
  auto inspect = run(bin() + " inspect --json -", m.string());
  CHECK(inspect.status == 0);
  CHECK(nlohmann::json::parse(inspect.out)["graph"]["nodes"] == 2);
}

TEST_CASE("convert moves weights to external data and back", "[cli][external]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir);
  auto r =
      run(bin() + " convert " + q(m) + " -o " + q(dir / "ext.onnx") + " --external-data w.bin --size-threshold 16");
  REQUIRE(r.status == 0);
  CHECK(fs::file_size(dir / "w.bin") == 64);
  CHECK(fs::file_size(dir / "ext.onnx") < fs::file_size(m));
  auto back = run(bin() + " convert " + q(dir / "ext.onnx") + " -o " + q(dir / "back.onnx") + " --embed-external-data");
  REQUIRE(back.status == 0);
  CHECK(graphrw::test::readFile(dir / "back.onnx") == graphrw::test::readFile(m));
  auto both = run(bin() + " convert " + q(m) + " --external-data a.bin --embed-external-data");
  CHECK(both.status == 2);
}

TEST_CASE("validate: findings and exit codes", "[cli][validate]") {
  graphrw::test::TempDir dir;
  auto ok = run(bin() + " validate " + q(smallModel(dir)));
  CHECK(ok.status == 0);
  CHECK_THAT(ok.out, Catch::Contains("valid"));

  auto wrongType = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  Y = Relu <__ipu_number = 1.0, __outline = ["a"]> (X)
}
)");
  graphrw::test::writeProto(wrongType, dir / "popart.onnx");
  auto p = run(bin() + " validate --json " + q(dir / "popart.onnx"));
  CHECK(p.status == 1);
  auto j = nlohmann::json::parse(p.out);
  CHECK(j["valid"] == false);
  std::string all = j["findings"].dump();
  CHECK_THAT(all, Catch::Contains("__ipu_number") && Catch::Contains("PopART reads it as INT"));
  CHECK_THAT(all, Catch::Contains("odd number"));

  auto badShape = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2,3] X, float[4,5] Z) => (float[2,5] Y) {
  Y = MatMul(X, Z)
}
)");
  graphrw::test::writeProto(badShape, dir / "shape.onnx");
  auto s = run(bin() + " validate " + q(dir / "shape.onnx"));
  CHECK(s.status == 1);
  CHECK_THAT(s.out, Catch::Contains("shape-inference"));
}

TEST_CASE("expand from the command line: output name, selectors, report, pipes", "[cli][expand]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir);
  auto r = run(bin() + " expand " + q(m) + " --report " + q(dir / "report.json"));
  REQUIRE(r.status == 0);
  auto expanded = graphrw::test::readProto(dir / "m.expanded.onnx");
  CHECK(expanded.functions_size() == 0);
  CHECK(expanded.graph().node_size() == 2);
  auto report = nlohmann::json::parse(graphrw::test::readFile(dir / "report.json"));
  CHECK(report["passes"][0]["pass"] == "expand");
  CHECK(report["passes"][0]["calls_inlined"]["local::Layer"] == 1);
  CHECK(report["passes"][0]["functions_removed"][0] == "local::Layer");
  CHECK(report["passes"][0].contains("seconds"));

  // An explicit selector that matches nothing is an error (exit 2, nothing written) unless allowed.
  graphrw::test::writeFile(dir / "keep.onnx", "old");
  auto strict = run(bin() + " expand " + q(m) + " -o " + q(dir / "keep.onnx") + " --select op_type=Nothing");
  CHECK(strict.status == 2);
  CHECK(lines(strict.err) == 1);
  CHECK_THAT(strict.err, Catch::Contains("expand: selector 'op_type=Nothing' matched no call"));
  CHECK(graphrw::test::readFile(dir / "keep.onnx") == "old");

  auto none =
      run(bin() + " expand " + q(m) + " -o " + q(dir / "none.onnx") + " --select op_type=Nothing --allow-no-match");
  CHECK(none.status == 0);
  CHECK_THAT(none.err, Catch::Contains("matched no call"));
  CHECK(graphrw::test::readFile(dir / "none.onnx") == graphrw::test::readFile(m));

  // With no selector, a model without functions is a successful no-op.
  REQUIRE(run(bin() + " expand " + q(m) + " -o " + q(dir / "plain0.onnx")).status == 0);
  auto plain = run(bin() + " expand " + q(dir / "plain0.onnx") + " -o " + q(dir / "plain1.onnx"));
  CHECK(plain.status == 0);
  CHECK(plain.err.find("warning") == std::string::npos);
  CHECK(graphrw::test::readFile(dir / "plain1.onnx") == graphrw::test::readFile(dir / "plain0.onnx"));

  auto badSel = run(bin() + " expand " + q(m) + " --select op_typo=Layer");
  CHECK(badSel.status == 2);
  CHECK_THAT(badSel.err, Catch::Contains("unknown key 'op_typo'"));

  auto pipe = run("cat " + q(m) + " | " + bin() + " expand - -o - --verify-each | " + bin() + " convert - -o " +
                  q(dir / "piped.onnx"));
  REQUIRE(pipe.status == 0);
  CHECK(graphrw::test::readFile(dir / "piped.onnx") == graphrw::test::readFile(dir / "m.expanded.onnx"));

  auto stdoutReport = run(bin() + " expand " + q(m) + " -o " + q(dir / "x.onnx") + " --report -");
  CHECK(stdoutReport.status == 0);
  CHECK(nlohmann::json::parse(stdoutReport.out)["passes"][0]["matched"] == 1);
}

TEST_CASE("run: a rule file gives what the equivalent command gives", "[cli][rules]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir);
  graphrw::test::writeFile(
      dir / "inline.rules.json",
      R"({"version": 1, "passes": [{"pass": "expand", "select": {"op_type": "Layer", "domain": "local"}}]})");
  auto byRules = run(bin() + " run " + q(dir / "inline.rules.json") + " " + q(m));
  REQUIRE(byRules.status == 0);
  auto byCommand = run(bin() + " expand " + q(m) + " --select op_type=Layer,domain=local -o " + q(dir / "cmd.onnx"));
  REQUIRE(byCommand.status == 0);
  // Default name: MODEL.RULES.onnx
  CHECK(graphrw::test::readFile(dir / "m.inline.onnx") == graphrw::test::readFile(dir / "cmd.onnx"));

  auto piped = run("cat " + q(m) + " | " + bin() + " run " + q(dir / "inline.rules.json") + " - -o - | " + bin() +
                   " convert - -o " + q(dir / "piped.onnx"));
  CHECK(piped.status == 0);
  CHECK(graphrw::test::readFile(dir / "piped.onnx") == graphrw::test::readFile(dir / "cmd.onnx"));
}

TEST_CASE("run: a bad rule file fails before the model is read, nothing written", "[cli][rules]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir);
  graphrw::test::writeFile(dir / "bad.json", "{\n  \"version\": 1,\n  \"passes\": [{\"pass\": \"expnd\"}]\n}\n");
  graphrw::test::writeFile(dir / "out.onnx", "old");
  auto r =
      run(bin() + " run " + q(dir / "bad.json") + " " + q(dir / "no-such-model.onnx") + " -o " + q(dir / "out.onnx"));
  CHECK(r.status == 2);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::Contains("bad.json:3: /passes/0/pass: unknown pass 'expnd' (did you mean 'expand'?)"));
  CHECK(graphrw::test::readFile(dir / "out.onnx") == "old");
  auto missing = run(bin() + " run " + q(dir / "none.json") + " " + q(m));
  CHECK(missing.status == 2);
}

TEST_CASE("schema prints the rule-file schema", "[cli][rules]") {
  auto r = run(bin() + " schema");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  CHECK(j["$defs"].contains("expand"));
}

namespace {

// Five good models and a broken one in `dir/in`.
std::vector<fs::path> batchInputs(const graphrw::test::TempDir& dir) {
  fs::create_directories(dir / "in");
  std::vector<fs::path> inputs;
  for (int i = 1; i <= 5; ++i) {
    fs::path p = dir / "in" / ("m" + std::to_string(i) + ".onnx");
    std::string command =
        GRAPHRW_GEN_BERT;  // (one string grown in place: GCC 12's -Warray-bounds misreads a chain of +)
    command +=
        " -o " + q(p) + " --layers 1 --hidden 16 --heads 2 --intermediate 32 --vocab 50 --seq 4 --batch 1 --seed ";
    command += std::to_string(i);
    auto r = run(command);
    REQUIRE(r.status == 0);
    inputs.push_back(p);
  }
  graphrw::test::writeFile(dir / "in" / "broken.onnx", "not a model");
  inputs.push_back(dir / "in" / "broken.onnx");
  return inputs;
}

std::string joined(const std::vector<fs::path>& paths) {
  std::string s;
  for (const auto& p : paths) s += " " + q(p);
  return s;
}

}  // namespace

TEST_CASE("run over many models: one broken model does not stop the others", "[cli][batch]") {
  graphrw::test::TempDir dir;
  auto inputs = batchInputs(dir);
  std::string rules = std::string(GRAPHRW_SOURCE_DIR) + "/examples/expand-bert.rules.json";
  auto r = run(bin() + " run " + q(rules) + joined(inputs) + " --out-dir " + q(dir / "out") + " --report " +
               q(dir / "report.json"));
  CHECK(r.status == 3);
  CHECK_THAT(r.err, Catch::Contains("converted 5, failed 1"));
  CHECK_THAT(r.err, Catch::Contains("broken.onnx: not an ONNX model"));
  CHECK_THAT(r.err, Catch::Contains("[6/6]"));  // plain progress lines: stderr is not a terminal
  for (int i = 1; i <= 5; ++i) {
    auto out = graphrw::test::readProto(dir / "out" / ("m" + std::to_string(i) + ".onnx"));
    CHECK(out.functions_size() == 0);
  }
  CHECK_FALSE(fs::exists(dir / "out" / "broken.onnx"));
  auto report = nlohmann::json::parse(graphrw::test::readFile(dir / "report.json"));
  REQUIRE(report["models"].size() == 6);
  CHECK(report["models"][0]["ok"] == false);  // sorted: broken.onnx first
  CHECK(report["models"][1]["passes"][0]["pass"] == "expand");
}

TEST_CASE("run: output is the same whatever -j", "[cli][batch]") {
  graphrw::test::TempDir dir;
  auto inputs = batchInputs(dir);
  std::string rules = std::string(GRAPHRW_SOURCE_DIR) + "/examples/expand-bert.rules.json";
  REQUIRE(run(bin() + " -q run " + q(rules) + joined(inputs) + " --out-dir " + q(dir / "j1") + " -j 1").status == 3);
  REQUIRE(run(bin() + " -q run " + q(rules) + joined(inputs) + " --out-dir " + q(dir / "j4") + " -j 4").status == 3);
  for (int i = 1; i <= 5; ++i) {
    std::string name = "m" + std::to_string(i) + ".onnx";
    CHECK(graphrw::test::readFile(dir / "j1" / name) == graphrw::test::readFile(dir / "j4" / name));
  }
}

TEST_CASE("run --shard I/N: the shards cover every input exactly once", "[cli][batch]") {
  graphrw::test::TempDir dir;
  auto inputs = batchInputs(dir);
  inputs.pop_back();  // the good ones only
  std::string rules = std::string(GRAPHRW_SOURCE_DIR) + "/examples/expand-bert.rules.json";
  std::multiset<std::string> seen;
  for (int shard = 0; shard < 3; ++shard) {
    fs::path out = dir / ("s" + std::to_string(shard));
    // Inputs given in another order: shards are taken from the sorted list.
    std::vector<fs::path> reversed(inputs.rbegin(), inputs.rend());
    auto r = run(bin() + " -q run " + q(rules) + joined(reversed) + " --out-dir " + q(out) + " --shard " +
                 std::to_string(shard) + "/3");
    REQUIRE(r.status == 0);
    for (const auto& e : fs::directory_iterator(out)) seen.insert(e.path().filename().string());
  }
  CHECK(seen == std::multiset<std::string>{"m1.onnx", "m2.onnx", "m3.onnx", "m4.onnx", "m5.onnx"});
  auto bad = run(bin() + " run " + q(rules) + joined(inputs) + " --out-dir " + q(dir / "x") + " --shard 3/3");
  CHECK(bad.status == 2);
  auto noDir = run(bin() + " run " + q(rules) + joined(inputs));
  CHECK(noDir.status == 2);
  CHECK_THAT(noDir.err, Catch::Contains("--out-dir"));
}

TEST_CASE("batch shard helper", "[batch]") {
  std::vector<std::string> in{"c", "a", "b", "a", "d"};
  CHECK(graphrw::shardInputs(in, {0, 2}) == std::vector<std::string>{"a", "c"});
  CHECK(graphrw::shardInputs(in, {1, 2}) == std::vector<std::string>{"b", "d"});
  CHECK_THROWS(graphrw::Shard::parse("2/2"));
  CHECK_THROWS(graphrw::Shard::parse("x/2"));
  CHECK(graphrw::Shard::parse("1/4").count == 4);
}

TEST_CASE("pipeline flags: --dry-run, --stop-after, --print-ir-after", "[cli][rules]") {
  graphrw::test::TempDir dir;
  fs::path model = fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "bert-tiny.onnx";
  std::string rules = std::string(GRAPHRW_SOURCE_DIR) + "/examples/expand-bert.rules.json";

  auto dry = run(bin() + " run " + q(rules) + " " + q(model) + " -o " + q(dir / "dry.onnx") + " --dry-run");
  REQUIRE(dry.status == 0);
  CHECK_FALSE(fs::exists(dir / "dry.onnx"));
  auto report = nlohmann::json::parse(dry.out);
  REQUIRE(report["passes"].size() == 2);
  CHECK(report["passes"][0]["matched"] == 4);
  CHECK(report["passes"][1]["schema_ops_expanded"]["LayerNormalization"] == 5);

  // Stopping after the first pass gives what the first pass alone gives.
  REQUIRE(run(bin() + " run " + q(rules) + " " + q(model) + " -o " + q(dir / "stop.onnx") + " --stop-after 1").status ==
          0);
  REQUIRE(run(bin() + " expand " + q(model) + " -o " + q(dir / "first.onnx") +
              " --select op_type=BertLayer --select op_type=BertAttention --select op_type=BertSelfAttention")
              .status == 0);
  CHECK(graphrw::test::readFile(dir / "stop.onnx") == graphrw::test::readFile(dir / "first.onnx"));
  auto full = run(bin() + " run " + q(rules) + " " + q(model) + " -o " + q(dir / "full.onnx"));
  REQUIRE(full.status == 0);
  CHECK(graphrw::test::readFile(dir / "full.onnx") != graphrw::test::readFile(dir / "first.onnx"));

  auto printed = run(bin() + " run " + q(rules) + " " + q(model) + " -o " + q(dir / "p.onnx") + " --print-ir-after 1");
  REQUIRE(printed.status == 0);
  CHECK_THAT(printed.err, Catch::Contains("IR after pass 1 (expand)"));
  CHECK_THAT(printed.err, !Catch::Contains("IR after pass 0"));
  CHECK_THAT(printed.err, Catch::Contains("ReduceMean"));  // LayerNormalization's body, expanded by pass 1
  CHECK(printed.out.empty());  // stdout stays clean

  auto dryBatch = run(bin() + " run " + q(rules) + " " + q(model) + " --out-dir " + q(dir / "batch") + " --dry-run");
  CHECK(dryBatch.status == 0);
  CHECK(nlohmann::json::parse(dryBatch.out)["models"][0]["ok"] == true);
  CHECK_FALSE(fs::exists(dir / "batch"));  // --out-dir appears with the first model written; a dry run writes none
}

TEST_CASE("run over many models draws a progress bar on a terminal", "[cli][batch]") {
  graphrw::test::TempDir dir;
  auto inputs = batchInputs(dir);
  std::string rules = std::string(GRAPHRW_SOURCE_DIR) + "/examples/expand-bert.rules.json";
  // script(1) (bsdutils) runs the command on a pseudo-terminal.
  std::string cmd = bin() + " run " + q(rules) + joined(inputs) + " --out-dir " + q(dir / "out");
  auto r = run("script -qec \"" + cmd + "\" /dev/null");
  CHECK(r.status == 3);
  // One status line, redrawn in place: done/total, failures, time left, the model being converted.
  CHECK_THAT(r.out, Catch::Contains("\r\033[K[") && Catch::Contains("] 5/6, 1 failed, ") && Catch::Contains(" left: "));
  CHECK_THAT(r.out, Catch::Contains("in/m1.onnx"));
  CHECK_THAT(r.out, !Catch::Contains("[1/6]"));  // no per-model lines on a terminal
  // The failure on a line of its own, naming the model once; then the summary.
  CHECK_THAT(r.out,
             Catch::Contains("\033[Kgraphrw: error: " + (dir / "in" / "broken.onnx").string() + ": not an ONNX model"));
  CHECK_THAT(r.out, Catch::Contains("graphrw: converted 5, failed 1, 0 warnings in 0 models, "));
}

TEST_CASE("payloads copied file to file and file to pipe give identical bytes", "[cli][writer]") {
  graphrw::test::TempDir dir;
  auto gen = run(std::string(GRAPHRW_GEN_BERT) + " -o " + q(dir / "big.onnx") +
                 " --layers 1 --hidden 64 --heads 2 --intermediate 128 --vocab 2000");
  REQUIRE(gen.status == 0);
  // To a file: copy_file_range. To a pipe: sendfile. Both from the mapped input's descriptor.
  REQUIRE(run(bin() + " convert " + q(dir / "big.onnx") + " -o " + q(dir / "file.onnx")).status == 0);
  REQUIRE(run(bin() + " convert " + q(dir / "big.onnx") + " -o - | cat > " + q(dir / "pipe.onnx")).status == 0);
  std::string original = graphrw::test::readFile(dir / "big.onnx");
  CHECK(graphrw::test::readFile(dir / "file.onnx") == original);
  CHECK(graphrw::test::readFile(dir / "pipe.onnx") == original);
  // External data written beside the output comes from the mapping the same way.
  REQUIRE(
      run(bin() + " convert " + q(dir / "big.onnx") + " -o " + q(dir / "ext.onnx") + " --external-data w.bin").status ==
      0);
  REQUIRE(run(bin() + " convert " + q(dir / "ext.onnx") + " -o - --embed-external-data | cat > " + q(dir / "back.onnx"))
              .status == 0);
  CHECK(graphrw::test::readFile(dir / "back.onnx") == original);
}

TEST_CASE("usage errors suggest the command or flag meant and point at that command's help", "[cli]") {
  graphrw::test::TempDir dir;
  auto m = smallModel(dir);
  auto typo = run(bin() + " expnd " + q(m));
  CHECK(typo.status == 2);
  CHECK(lines(typo.err) == 1);
  CHECK_THAT(typo.err, Catch::Contains("unknown command 'expnd' (did you mean 'expand'?)"));
  auto flag = run(bin() + " expand " + q(m) + " --selct op_type=Layer");
  CHECK(flag.status == 2);
  CHECK_THAT(flag.err, Catch::Contains("did you mean '--select'") && Catch::Contains("see graphrw expand --help"));
  auto missing = run(bin() + " checkpoint");
  CHECK_THAT(missing.err, Catch::Contains("see graphrw checkpoint --help"));

  // graphrw help [COMMAND]
  auto help = run(bin() + " help");
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Catch::Contains("expand") && Catch::Contains("prune"));
  auto helpCmd = run(bin() + " help outline");
  CHECK(helpCmd.status == 0);
  CHECK_THAT(helpCmd.out, Catch::Contains("--mode") && Catch::Contains("Examples:"));
  // Word for word what `graphrw outline --help` prints, usage line included.
  CHECK_THAT(helpCmd.out, Catch::Contains("Usage: graphrw outline [OPTIONS] model"));
  CHECK(helpCmd.out == run(bin() + " outline --help").out);
  auto helpBad = run(bin() + " help outlin");
  CHECK(helpBad.status == 2);
  CHECK_THAT(helpBad.err, Catch::Contains("did you mean 'outline'"));

  // Global flags after the subcommand.
  auto verbose = run(bin() + " convert " + q(m) + " -o " + q(dir / "v.onnx") + " -v");
  CHECK(verbose.status == 0);
  CHECK_THAT(verbose.err, Catch::Contains("graphrw: debug:") || Catch::Contains("graphrw: info: wrote"));
  auto quiet = run(bin() + " convert " + q(m) + " -o " + q(dir / "q.onnx") + " -q");
  CHECK(quiet.status == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE(
    "inspect counts ops in every graph (functions, If branches, callees once) and lists checkpoints once per graph",
    "[cli]") {
  graphrw::test::TempDir dir;
  // Two Calls carry copies of callee 'layer' (PopART builds it once), each
  // with a checkpoint inside; a function body and an If branch hold Dropouts.
  auto proto = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1, "ai.graphcore" : 1]>
main (float[2,4] X, bool c) => (float[2,4] Y, float[2,4] Z) {
  A = local.Block (X)
  B = ai.graphcore.Call <num_outputs = 1, callee = layer (float[2,4] a) => (float[2,4] b) {
    r = Relu (a)
    b = Identity <__recompute_output_in_backward_pass = 1> (r)
  }> (A)
  Y = ai.graphcore.Call <num_outputs = 1, callee = layer (float[2,4] a) => (float[2,4] b) {
    r = Relu (a)
    b = Identity <__recompute_output_in_backward_pass = 1> (r)
  }> (B)
  Z = If (c) <then_branch = t () => (float[2,4] o) {
    o = Dropout (X)
  }, else_branch = e () => (float[2,4] o) {
    o = Identity (X)
  }>
}
<domain: "local", opset_import: ["" : 17]>
Block (x) => (y) {
  y = Dropout (x)
}
)");
  graphrw::test::writeProto(proto, dir / "m.onnx");
  auto r = run(bin() + " inspect --json " + q(dir / "m.onnx"));
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, size_t> ops;
  for (const auto& op : j["ops"]) ops[op["op_type"].get<std::string>()] = op["count"].get<size_t>();
  CHECK(ops["Dropout"] == 2);  // the function's and the then branch's
  CHECK(ops["Relu"] == 1);  // the callee, once for its two copies
  CHECK(ops["Identity"] == 2);  // the callee's checkpoint and the else branch
  CHECK(ops["Call"] == 2);
  CHECK(ops["If"] == 1);
  std::map<std::string, nlohmann::json> graphs;
  for (const auto& g : j["graphs"]) graphs[g["kind"].get<std::string>() + " " + g["name"].get<std::string>()] = g;
  REQUIRE(graphs.count("main main"));
  CHECK(graphs["main main"]["nodes"] == 4);
  REQUIRE(graphs.count("callee layer"));
  CHECK(graphs["callee layer"]["calls"] == 2);
  CHECK(graphs["callee layer"]["nodes"] == 2);
  REQUIRE(graphs.count("function local::Block"));
  CHECK(graphs["function local::Block"]["ops"][0]["op_type"] == "Dropout");
  CHECK(graphs.size() == 5);  // main, callee, two branches, the function
  REQUIRE(j["recomputation"]["checkpoints"].size() == 1);
  CHECK(j["recomputation"]["checkpoints"][0]["callee"] == "layer");

  auto text = run(bin() + " inspect " + q(dir / "m.onnx"));
  CHECK_THAT(text.out, Catch::Contains("ops (main graph, 1 function body, 1 callee, 2 subgraphs):"));
  CHECK_THAT(text.out, Catch::Contains("2\tai.onnx::Dropout"));
  CHECK_THAT(text.out, Catch::Contains("checkpoints: 1\n  r (in callee layer)\n"));
}

TEST_CASE("batch: every warning names its model, per-model counts and a summary in the report", "[cli][batch]") {
  graphrw::test::TempDir dir;
  auto inputs = batchInputs(dir);
  inputs.pop_back();  // the broken one
  inputs.resize(2);
  graphrw::test::writeFile(dir / "r.json", R"({"version": 1, "passes": [{"pass": "replace", "allow_no_match": true,
    "replacements": [{"select": {"op_type": "Gelu"}, "with": "Relu"}]}]})");
  auto started = std::chrono::steady_clock::now();
  auto r = run(bin() + " run " + q(dir / "r.json") + joined(inputs) + " --out-dir " + q(dir / "out") +
               " -j 2 --report " + q(dir / "report.json"));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  CHECK(r.status == 0);
  for (const auto& in : inputs) {
    CHECK_THAT(r.err, Catch::Contains("graphrw: warning: " + in.string() + ": replace: "));
    CHECK_THAT(r.err, Catch::Contains(in.string() + ": converted (1 warning)"));
  }
  size_t warningLines = 0;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("graphrw: warning: ")) {
      ++warningLines;
      CHECK((line.find(inputs[0].string()) != std::string::npos || line.find(inputs[1].string()) != std::string::npos));
    }
  CHECK(warningLines == 2);
  CHECK_THAT(r.err, Catch::Contains("graphrw: converted 2, failed 0, 2 warnings in 2 models, "));
  auto report = nlohmann::json::parse(graphrw::test::readFile(dir / "report.json"));
  CHECK(report["summary"]["models"] == 2);
  CHECK(report["summary"]["converted"] == 2);
  CHECK(report["summary"]["failed"] == 0);
  CHECK(report["summary"]["warnings"] == 2);
  // The batch's own time: some, and no more than the whole process took.
  CHECK(report["summary"]["seconds"].get<double>() > 0);
  CHECK(report["summary"]["seconds"].get<double>() <= wall);
  // The summary line rounds the same figure.
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s", report["summary"]["seconds"].get<double>());
  CHECK_THAT(r.err, Catch::Contains(took));
  for (const auto& m : report["models"]) CHECK(m["warnings"] == 1);
}

TEST_CASE("external data: the size threshold and the alignment of each tensor in the data file", "[cli][external]") {
  graphrw::test::TempDir dir;
  // Y = X + A + B + C + D with weights of 100 B, 2,000 B, 3,000 B and 80,000 B.
  auto proto = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1] X) => (float[1] Y) {
  a = ReduceSum <keepdims = 0> (A)
  b = ReduceSum <keepdims = 0> (B)
  c = ReduceSum <keepdims = 0> (C)
  d = ReduceSum <keepdims = 0> (D)
  s1 = Add (a, b)
  s2 = Add (c, d)
  s = Add (s1, s2)
  Y = Add (X, s)
}
)");
  std::map<std::string, std::string> bytes;
  for (auto [name, count] : {std::pair{"A", 25}, {"B", 500}, {"C", 750}, {"D", 20000}}) {
    auto* t = proto.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(count);
    std::string raw(static_cast<size_t>(count) * 4, '\0');
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>((i * 7 + name[0]) & 0xff);
    t->set_raw_data(raw);
    bytes[name] = raw;
  }
  graphrw::test::writeProto(proto, dir / "m.onnx");

  auto check = [&](const fs::path& model, const fs::path& data, const std::set<std::string>& external) {
    auto out = graphrw::test::readProto(model);
    std::string file = graphrw::test::readFile(data);
    for (const auto& t : out.graph().initializer()) {
      INFO(t.name());
      bool isExternal = t.data_location() == onnx::TensorProto::EXTERNAL;
      CHECK(isExternal == (external.count(t.name()) == 1));
      if (!isExternal) {
        CHECK(t.raw_data() == bytes[t.name()]);
        continue;
      }
      uint64_t offset = 0, length = 0;
      for (const auto& e : t.external_data()) {
        if (e.key() == "offset") offset = std::stoull(e.value());
        if (e.key() == "length") length = std::stoull(e.value());
      }
      CHECK(length == bytes[t.name()].size());
      CHECK(offset % (length >= 65536 ? 4096 : 16) == 0);
      REQUIRE(offset + length <= file.size());
      CHECK(file.substr(offset, length) == bytes[t.name()]);
    }
  };
  // Default threshold 1,024 bytes: A stays in the model.
  REQUIRE(run(bin() + " convert " + q(dir / "m.onnx") + " --external-data w.bin -o " + q(dir / "a.onnx")).status == 0);
  check(dir / "a.onnx", dir / "w.bin", {"B", "C", "D"});
  // A threshold of 50,000 bytes moves D only.
  REQUIRE(run(bin() + " convert " + q(dir / "m.onnx") + " --external-data big.bin --size-threshold 50000 -o " +
              q(dir / "b.onnx"))
              .status == 0);
  check(dir / "b.onnx", dir / "big.bin", {"D"});
  // And back into the model, the same bytes as the original.
  REQUIRE(run(bin() + " convert " + q(dir / "a.onnx") + " --embed-external-data -o " + q(dir / "c.onnx")).status == 0);
  CHECK(graphrw::test::readFile(dir / "c.onnx") == graphrw::test::readFile(dir / "m.onnx"));
}

TEST_CASE("quiet: -q silences the terminal only: the report is the same, warnings counted", "[cli][batch]") {
  graphrw::test::TempDir dir;
  auto inputs = batchInputs(dir);
  graphrw::test::writeFile(dir / "warn.json", R"({"version": 1, "passes": [
    {"pass": "checkpoint", "after": [{"op_type": "Dropout"}], "allow_no_match": true}]})");
  auto loud = run(bin() + " run " + q(dir / "warn.json") + joined(inputs) + " --out-dir " + q(dir / "a") +
                  " --report " + q(dir / "a.json"));
  auto quiet = run(bin() + " -q run " + q(dir / "warn.json") + joined(inputs) + " --out-dir " + q(dir / "b") +
                   " --report " + q(dir / "b.json"));
  CHECK(loud.status == 3);  // the broken model
  CHECK(quiet.status == 3);
  CHECK_THAT(loud.err, Catch::Contains("warning: ") && Catch::Contains("matched no node"));
  CHECK_THAT(quiet.err, !Catch::Contains("warning: ") && Catch::Contains("failed 1, 5 warnings in 5 models") &&
                            Catch::Contains("not an ONNX model"));
  auto strip = [](nlohmann::json r) {  // times and paths differ between the runs
    r["summary"].erase("seconds");
    for (auto& m : r["models"]) {
      m.erase("output");
      for (auto& p : m["passes"]) p.erase("seconds");
    }
    return r;
  };
  auto a = strip(nlohmann::json::parse(graphrw::test::readFile(dir / "a.json")));
  auto b = strip(nlohmann::json::parse(graphrw::test::readFile(dir / "b.json")));
  CHECK(a["summary"]["warnings"] == 5);
  CHECK(a == b);
  // Without a failure, -q prints nothing at all.
  auto clean = run(bin() + " -q run " + q(dir / "warn.json") + " " + q(inputs[1]) + " --out-dir " + q(dir / "c"));
  CHECK(clean.status == 0);
  CHECK(clean.err.empty());
}

TEST_CASE("passes that changed nothing: a summary line, --strict makes them an error, bundled rules on the example",
          "[cli][batch]") {
  graphrw::test::TempDir dir;
  const std::string example = q(fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "bert-tiny.onnx");
  // The bundled rule file on the bundled example: not one warning, nothing idle.
  auto bundled = run(bin() + " run " + q(fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "popart.rules.json") + " " +
                     example + " -o " + q(dir / "ipu.onnx"));
  CHECK(bundled.status == 0);
  CHECK_THAT(bundled.err, !Catch::Contains("warning") && !Catch::Contains("changed nothing"));

  auto idle = run(bin() + " outline " + example + " --select op_type=Conv --allow-no-match -o " + q(dir / "o.onnx"));
  CHECK(idle.status == 0);
  CHECK_THAT(idle.err, Catch::Contains("info: changed nothing: outline (0 matched)"));
  graphrw::test::writeFile(dir / "keep.onnx", "old");
  auto strict = run(bin() + " outline " + example + " --select op_type=Conv --allow-no-match --strict -o " +
                    q(dir / "keep.onnx"));
  CHECK(strict.status == 1);
  CHECK_THAT(strict.err, Catch::Contains("error: --strict: a pass changed nothing: outline (0 matched)"));
  CHECK(graphrw::test::readFile(dir / "keep.onnx") == "old");
  // A pass that changed something passes --strict.
  CHECK(run(bin() + " outline " + example + " --select 'scope=/encoder/layer.*' --strict -o " + q(dir / "p.onnx"))
            .status == 0);

  // A batch: one summary line per pass that changed nothing, in the report too; --strict fails those models.
  auto inputs = batchInputs(dir);
  inputs.pop_back();  // the broken model
  graphrw::test::writeFile(dir / "idle.json", R"({"version": 1, "passes": [
    {"pass": "checkpoint", "after": [{"op_type": "MatMul"}]},
    {"pass": "checkpoint", "after": [{"op_type": "Dropout"}], "allow_no_match": true}]})");
  auto batch = run(bin() + " run " + q(dir / "idle.json") + joined(inputs) + " --out-dir " + q(dir / "a") +
                   " --report " + q(dir / "a.json"));
  CHECK(batch.status == 0);
  CHECK_THAT(batch.err, Catch::Contains("graphrw: changed nothing: checkpoint in 5 models"));
  auto report = nlohmann::json::parse(graphrw::test::readFile(dir / "a.json"));
  CHECK(report["summary"]["unchanged_passes"] == nlohmann::json{{"checkpoint", 5}});
  CHECK(report["models"][0]["unchanged_passes"] == nlohmann::json::array({"checkpoint"}));
  CHECK(report["models"][0]["passes"][0]["changed"] == true);
  auto strictBatch =
      run(bin() + " run " + q(dir / "idle.json") + joined(inputs) + " --out-dir " + q(dir / "b") + " --strict");
  CHECK(strictBatch.status == 3);
  CHECK_THAT(strictBatch.err, Catch::Contains("converted 0, failed 5") &&
                                  Catch::Contains("--strict: a pass changed nothing: checkpoint (0 matched)"));
  CHECK(!fs::exists(dir / "b"));
}

TEST_CASE("completion: bash completes commands, completion's shells, each option once", "[cli][completion]") {
  graphrw::test::TempDir dir;
  auto script = run(bin() + " completion bash");
  REQUIRE(script.status == 0);
  graphrw::test::writeFile(dir / "c.bash", script.out);
  // What bash offers for the words typed so far (the last one being completed).
  auto complete = [&](const std::string& words) {
    graphrw::test::writeFile(dir / "t.bash",
                             "source " + q(dir / "c.bash") + "\nCOMP_WORDS=(" + words +
                                 ")\nCOMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n_graphrw\n"
                                 "[ ${#COMPREPLY[@]} -gt 0 ] && printf '%s\\n' \"${COMPREPLY[@]}\"\nexit 0\n");
    auto r = run("bash " + q(dir / "t.bash"));
    REQUIRE(r.status == 0);
    return r.out;
  };
  CHECK(complete("graphrw completion ''") == "bash\nzsh\n");
  CHECK(complete("graphrw comp") == "compare\ncompletion\n");
  auto options = complete("graphrw expand --");
  CHECK_THAT(options, Catch::Contains("--schema-ops\n") && Catch::Contains("--convert-opset\n"));
  std::istringstream lines(options);
  std::map<std::string, int> seen;
  for (std::string l; std::getline(lines, l);) ++seen[l];
  for (const auto& [word, n] : seen) {
    INFO(word);
    CHECK(n == 1);
  }
  CHECK(complete("graphrw legalize --target ''") == "popart\n");
  // After a flag the next word is a file again (a flag takes no value).
  CHECK(complete("graphrw validate --json " + q(dir / "c.b")) == (dir / "c.bash").string() + "\n");

  // zsh: flags take no value, each option once per command, and the script parses.
  auto zsh = run(bin() + " completion zsh");
  REQUIRE(zsh.status == 0);
  CHECK_THAT(zsh.out,
             Catch::Contains("'--json[Print JSON]' \\\n") && Catch::Contains("'-q[Only errors on stderr]' \\\n") &&
                 Catch::Contains("'--rtol[Relative tolerance") && !Catch::Contains("'--json[Print JSON]:value:"));
  std::istringstream zshLines(zsh.out);
  std::map<std::string, int> specs;  // per command section
  std::string section;
  for (std::string l; std::getline(zshLines, l);) {
    if (l.size() > 8 && l.starts_with("        ") && l.back() == ')' && l.find('\'') == std::string::npos) {
      section = l;
      specs.clear();
    }
    if (!section.empty() && l.find("['") == std::string::npos && l.find("'-") != std::string::npos) {
      INFO(section << ": " << l);
      CHECK(++specs[l] == 1);
    }
  }
  graphrw::test::writeFile(dir / "_graphrw", zsh.out);
  CHECK(run("zsh -n " + q(dir / "_graphrw")).status == 0);
}
