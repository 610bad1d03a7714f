// The property behind "what graphrw writes, its own validate accepts": every
// pass and every bundled rule file, over the bundled example, the PyTorch
// exports and a spread of ONNX's backend corpus. A run either writes a model
// that validate (and, for PopART rule files, validate --target popart)
// accepts, or refuses with one of graphrw's errors; never an internal error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "driver/validate.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/check.h"
#include "target/popart/session.h"

namespace fs = std::filesystem;
using namespace graphrw;

namespace {

std::vector<fs::path> propertyModels(const test::TempDir& dir) {
  fs::path src = GRAPHRW_SOURCE_DIR;
  // A 4-layer Hugging Face-style BERT, what examples/ipu-bert-pretraining.rules.json is written for.
  auto gen = test::run(std::string(GRAPHRW_GEN_BERT) + " -o '" + (dir / "bert4.onnx").string() +
                       "' --layers 4 --seq 16 --batch 1");
  REQUIRE(gen.status == 0);
  std::vector<fs::path> models = {src / "examples" / "bert-tiny.onnx", dir / "bert4.onnx"};
  for (const auto& e : fs::directory_iterator(src / "tests" / "models" / "pytorch"))
    if (e.path().extension() == ".onnx") models.push_back(e.path());
  std::vector<fs::path> corpus;
  for (const auto& e : fs::directory_iterator(fs::path(ONNX_TESTDATA_DIR) / "node"))
    if (fs::exists(e.path() / "model.onnx")) corpus.push_back(e.path() / "model.onnx");
  std::sort(corpus.begin(), corpus.end());
  for (size_t i = 0; i < corpus.size(); i += 6) models.push_back(corpus[i]);  // a spread of ops and opsets
  std::sort(models.begin() + 2, models.end());
  return models;
}

struct Pipeline {
  std::string name, text;
  fs::path file;  // a bundled rule file, loaded from its folder (its relative paths)
  bool popart = false;  // its output is for PopART: validate --target popart must accept it too
  std::string record;  // its refusals are recorded in tests/expected/property/RECORD.json
};

// Each pass's own pipelines, from the "property" list of its case file
// (tests/passes/cases/NAME.json: label, rule, popart), and every bundled rule file.
std::vector<Pipeline> pipelines() {
  fs::path src = GRAPHRW_SOURCE_DIR;
  auto one = [](const std::string& pass) { return R"({"version": 1, "passes": [)" + pass + "]}"; };
  std::vector<Pipeline> list;
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(src / "tests" / "passes" / "cases")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  for (const auto& path : cases) {
    auto c = nlohmann::json::parse(test::readFile(path));
    INFO(path.string() << ": every pass's case lists what the property test runs (\"property\")");
    REQUIRE(c.contains("property"));
    for (const auto& p : c["property"])
      list.push_back({p.at("label").get<std::string>(),
                      one(p.at("rule").dump()),
                      {},
                      p.value("popart", false),
                      path.stem().string()});
  }
  for (const auto& dir : {src / "examples", src / "examples" / "patterns"})
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.path().string().ends_with(".rules.json")) continue;
      std::string text = test::readFile(e.path());
      bool library = dir.filename() == "patterns";
      if (library)  // a pattern library is used by a pattern pass
        text = one(R"({"pass": "pattern", "allow_no_match": true, "rules_file": ")" + e.path().string() + "\"}");
      list.push_back({e.path().filename().string(), text, library ? fs::path() : e.path(),
                      e.path().filename() == "popart.rules.json" ||
                          e.path().filename() == "popart-training.rules.json" ||
                          e.path().filename() == "ipu-bert-pretraining.rules.json",
                      "rule-files"});
    }
  return list;
}

// Node names (non-empty ones) that repeat within a graph and its subgraphs,
// or hold "//" (an empty scope joined twice).
// Returns the first offending name, "" when clean.
std::string unclean(const onnx::ModelProto& m) {
  std::set<std::string> callees;
  std::string bad;
  // A graph with the subgraphs it holds is one namespace; a callee (like a
  // function body) is its own, and every Call carries a copy of it (PopART
  // builds it once, by name): one copy counts.
  std::function<void(const onnx::GraphProto&, std::set<std::string>&)> walk = [&](const onnx::GraphProto& g,
                                                                                  std::set<std::string>& seen) {
    for (const auto& n : g.node()) {
      if (!n.name().empty() && (!seen.insert(n.name()).second || n.name().find("//") != std::string::npos) &&
          bad.empty())
        bad = n.name();
      for (const auto& a : n.attribute()) {
        bool callee = n.domain() == "ai.graphcore" && n.op_type() == "Call" && a.name() == "callee";
        if (callee) {
          std::set<std::string> own;
          if (callees.insert(a.g().name()).second) walk(a.g(), own);
          continue;
        }
        if (a.has_g()) walk(a.g(), seen);
        for (const auto& sub : a.graphs()) walk(sub, seen);
      }
    }
  };
  std::set<std::string> main;
  walk(m.graph(), main);
  return bad;
}

}  // namespace

TEST_CASE("property: every pass and bundled rule file writes what validate accepts, or refuses cleanly", "[property]") {
  test::TempDir dir;
  auto models = propertyModels(dir);
  auto list = pipelines();
  REQUIRE(models.size() > 40);
  REQUIRE(list.size() >= 20);
  std::map<std::string, size_t> written, refused;
  // Each refusal, as tests/expected/property/RECORD.json records it (one
  // record per pass, and one for the bundled rule files):
  // "pipeline | model" -> "exit N: message" (temporary paths as {dir}).
  std::map<std::string, nlohmann::json> refusals;
  for (const auto& p : list) refusals.emplace(p.record, nlohmann::json::object());
  std::set<std::string> invalidInputs;
  auto label = [&](const fs::path& path) {
    std::string s = path.string();
    for (const std::string& root :
         {dir.path().string() + "/", std::string(GRAPHRW_SOURCE_DIR) + "/", std::string(ONNX_TESTDATA_DIR) + "/"})
      if (s.starts_with(root)) return s.substr(root.size());
    return s;
  };
  auto normalised = [&](std::string text) {
    for (const std::string& root :
         {dir.path().string(), std::string(GRAPHRW_SOURCE_DIR), std::string(ONNX_TESTDATA_DIR)})
      for (size_t at; (at = text.find(root)) != std::string::npos;) text.replace(at, root.size(), "{dir}");
    return text;
  };
  size_t skipped = 0;
  for (const auto& path : models) {
    std::unique_ptr<ir::Model> original;
    try {
      original = loadModel(path.string());
    } catch (const Error& e) {
      FAIL(path.string() << ": " << e.what());
    }
    // Only models that are valid to begin with say anything about the passes.
    if (!validateModel(*original).empty()) {
      ++skipped;
      invalidInputs.insert(label(path));
      continue;
    }
    const std::string bytes = serialize(*original);
    onnx::ModelProto originalProto;
    REQUIRE(originalProto.ParseFromString(bytes));
    const bool namesWereClean = unclean(originalProto).empty();
    for (const auto& p : list) {
      INFO(path.string() << " through " << p.name);
      onnx::ModelProto proto;
      REQUIRE(proto.ParseFromString(bytes));
      auto model = loadModel(proto, path.parent_path());
      try {
        auto rules = p.file.empty() ? parseRules(p.text, p.name) : loadRules(p.file.string());
        PassManager pm({/*verifyEach=*/true, std::nullopt, ""});
        // A bundled rule file runs on an export with symbolic dimensions as docs/popart.md says: after set-shapes.
        if (!p.file.empty())
          if (auto shapes = test::exportShapes(*model)) pm.add(std::move(shapes));
        for (auto& pass : rules.passes) pm.add(pass);
        pm.run(*model);
      } catch (const Error& e) {
        INFO(e.what());
        CHECK(e.code() != ExitCode::Internal);
        CHECK(e.code() != ExitCode::Findings);  // the verifier never finds a broken IR
        ++refused[p.name];
        refusals[p.record][p.name + " | " + label(path)] =
            "exit " + std::to_string(static_cast<int>(e.code())) + ": " + normalised(e.what());
        continue;
      }
      // What would be written, read back as a fresh model.
      onnx::ModelProto out;
      REQUIRE(out.ParseFromString(serialize(*model)));
      auto reread = loadModel(out, path.parent_path());
      // Names graphrw makes are unique and never hold "//" (when the model's own were so).
      if (namesWereClean) CHECK(unclean(out) == "");
      auto findings = validateModel(*reread);
      for (const auto& f : findings) FAIL_CHECK(f.check << ": " << f.where << ": " << f.message);
      if (p.popart) {
        for (const auto& f : popart::checkImport(*reread))
          FAIL_CHECK("popart:" << f.check << ": " << f.where << ": " << f.message);
        for (const auto& f : popart::checkSession(*reread, {}))
          FAIL_CHECK("popart:" << f.check << ": " << f.where << ": " << f.message);
      }
      ++written[p.name];
    }
  }
  // Exactly the refusals recorded, each for its recorded reason: a pipeline
  // that starts refusing a model (or stops) fails until the record is reviewed.
  for (const auto& [record, recorded] : refusals) {
    nlohmann::json r = {{"refused", recorded}};
    if (record == "rule-files") r["invalid_inputs"] = invalidInputs;
    test::checkExpected("property/" + record, r);
  }
  // Every pipeline wrote something somewhere (a pipeline refusing everything would prove nothing).
  for (const auto& p : list) {
    INFO(p.name << ": written " << written[p.name] << ", refused " << refused[p.name]);
    CHECK(written[p.name] > 0);
  }
  WARN("property: " << models.size() - skipped << " models x " << list.size() << " pipelines; " << skipped
                    << " corpus models not valid to begin with were left out");
}
