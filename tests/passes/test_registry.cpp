// Every registered pass, whatever it is, has what the architecture promises
// (docs/architecture.md "How to add a pass"): a schema made from its
// declaration that names it, defaults its schema accepts, a generated
// subcommand with every declared flag and examples, a section in
// docs/passes/NAME.md holding its generated options table, and a case
// (tests/passes/cases/NAME.json) on which its command and the equivalent
// one-pass rule file write the same bytes, and change the model.
//
// A case names its model ("model": a path below the repository, or
// "model_text": ONNX's textual syntax as a list of lines), an optional
// "prepare" command run on it first, optional "files" written beside the rule
// file ("{dir}" in args is their folder), optional "doc_strings" set on the
// model and its nodes, the command's "args" and the equivalent "rule".
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/rules.h"
#include "pass/json_schema.h"
#include "pass/pass.h"
#include "support.h"

namespace fs = std::filesystem;
using graphrw::test::readFile;
using graphrw::test::run;
using nlohmann::json;

namespace {

const fs::path kRoot = GRAPHRW_SOURCE_DIR;

// A shell word: 'text' with quotes inside escaped.
std::string q(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
std::string q(const fs::path& p) { return q(p.string()); }

std::string longFlag(const std::string& flags) {
  auto comma = flags.rfind(',');
  return comma == std::string::npos ? flags : flags.substr(comma + 1);
}

}  // namespace

TEST_CASE("the registry holds every pass the project ships", "[registry]") {
  std::vector<std::string> names;
  for (const auto* p : graphrw::registeredPasses()) names.push_back(p->name);
  // One case per pass and one pass per case; no schema file per pass (each is made from its declaration).
  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(kRoot / "tests" / "passes" / "cases"))
    cases.push_back(e.path().stem().string());
  std::sort(cases.begin(), cases.end());
  CHECK(names == cases);
  CHECK(names.size() >= 12);
  CHECK_FALSE(fs::exists(kRoot / "schemas" / "passes"));
}

TEST_CASE("every registered pass has a schema, a subcommand, docs and a case its command and rule file agree on",
          "[registry][cli]") {
  for (const graphrw::PassSpec* spec : graphrw::registeredPasses()) {
    DYNAMIC_SECTION("pass " << spec->name) {
      // Schema: made from the declaration; the entry's "pass" is this pass, every
      // flag lands on a key it defines, and each default is a value its key accepts.
      const auto& schemas = graphrw::SchemaSet::builtin();
      const json& schema = schemas.document(spec->schemaPath());
      CHECK(schema == spec->schema());
      CHECK(schema["properties"]["pass"]["const"] == spec->name);
      for (const auto& o : spec->options) {
        std::string top = o.target().substr(1, o.target().find('/', 1) - 1);
        INFO("option " << o.key << o.flags << " -> " << o.target());
        CHECK(schema["properties"].contains(top));
        if (!o.defaultValue.is_null()) {
          CHECK(schema["properties"][top]["default"] == o.defaultValue);
          auto error = schemas.validate(o.defaultValue, spec->schemaPath(), "/properties/" + top);
          CHECK_FALSE(error.has_value());
          CHECK(graphrw::optionDefault(spec->name, o.key) == o.defaultValue);
        }
      }
      CHECK_FALSE(spec->summary.empty());
      CHECK(spec->examples.size() >= 2);
      // buildPass() refuses (exit 70) a pass whose name() differs from its declaration: the case below builds it.

      // Subcommand: generated, with every flag and the examples.
      auto help = run(graphrw::test::graphrwBin() + " " + spec->name + " --help");
      CHECK(help.status == 0);
      for (const auto& o : spec->options)
        if (!o.flags.empty()) CHECK_THAT(help.out, Catch::Contains(longFlag(o.flags)));
      CHECK_THAT(help.out, Catch::Contains("Examples:") && Catch::Contains(spec->examples.front()));

      // Docs: a page of its own, holding the options table made from the declaration.
      fs::path page = kRoot / "docs" / "passes" / (spec->name + ".md");
      REQUIRE(fs::exists(page));
      const std::string docs = readFile(page);
      CHECK(docs.starts_with("# " + spec->name + "\n"));
      CHECK_THAT(docs, Catch::Contains(graphrw::optionsMarkdown(*spec)));

      // A case: command and rule file write the same bytes, and they differ from the input.
      fs::path casePath = kRoot / "tests" / "passes" / "cases" / (spec->name + ".json");
      REQUIRE(fs::exists(casePath));
      json c = json::parse(readFile(casePath));
      graphrw::test::TempDir dir;
      fs::path input;
      if (c.contains("model_text")) {  // ONNX's textual syntax, lines joined
        std::string text;
        for (const auto& line : c["model_text"]) text += line.get<std::string>() + "\n";
        auto proto = graphrw::test::parseModel(text);
        // "doc_strings": TEXT on the model and every node of its main graph (the text syntax has none).
        if (c.contains("doc_strings")) {
          proto.set_doc_string(c["doc_strings"].get<std::string>());
          for (auto& n : *proto.mutable_graph()->mutable_node()) n.set_doc_string(c["doc_strings"].get<std::string>());
        }
        graphrw::test::writeProto(proto, dir / "model.onnx");
        input = dir / "model.onnx";
      } else {
        input = kRoot / c["model"].get<std::string>();
      }
      if (c.contains("prepare")) {
        std::string cmd = graphrw::test::graphrwBin();
        for (const auto& a : c["prepare"]) cmd += " " + q(a.get<std::string>());
        auto prepared = run(cmd + " " + q(input) + " -o " + q(dir / "input.onnx"));
        REQUIRE(prepared.status == 0);
        input = dir / "input.onnx";
      }
      // Files the case needs beside the rule file ("files": {name: JSON}); "{dir}" in args is their folder.
      if (c.contains("files"))
        for (const auto& [name, content] : c["files"].items()) graphrw::test::writeFile(dir / name, content.dump(2));
      std::string cmd = graphrw::test::graphrwBin() + " " + spec->name + " " + q(input);
      for (const auto& a : c["args"]) {
        std::string arg = a.get<std::string>();
        if (auto at = arg.find("{dir}"); at != std::string::npos) arg.replace(at, 5, dir.path().string());
        cmd += " " + q(arg);
      }
      auto byCommand = run(cmd + " -o " + q(dir / "command.onnx"));
      INFO(cmd << "\n" << byCommand.err);
      REQUIRE(byCommand.status == 0);
      graphrw::test::writeFile(dir / "rules.json", json{{"version", 1}, {"passes", {c["rule"]}}}.dump(2));
      auto byRules = run(graphrw::test::graphrwBin() + " run " + q(dir / "rules.json") + " " + q(input) + " -o " +
                         q(dir / "rules.onnx"));
      INFO(byRules.err);
      REQUIRE(byRules.status == 0);
      CHECK(readFile(dir / "command.onnx") == readFile(dir / "rules.onnx"));
      CHECK(readFile(dir / "command.onnx") != readFile(input));
    }
  }
}
