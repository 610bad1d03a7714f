#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>

#include "driver/rules.h"
#include "pass/json_schema.h"
#include "passes/expand/expand.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;

namespace {

std::string ruleError(const std::string& text) {
  try {
    parseRules(text, "r.json");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("every bad rule file is rejected with its pointer and the reason", "[rules]") {
  // The same cases tests/schema/validate_rules.py checks the real validator rejects.
  auto cases = nlohmann::json::parse(test::readFile(std::string(GRAPHRW_SOURCE_DIR) + "/tests/schema/bad_rules.json"));
  REQUIRE(cases.size() >= 10);
  for (const auto& c : cases) {
    std::string msg = ruleError(c["rules"].dump());
    INFO(c["why"].get<std::string>() << ": " << msg);
    std::string pointer = c["pointer"].get<std::string>();
    CHECK_THAT(msg, Catch::StartsWith("r.json:1: " + (pointer.empty() ? std::string("/") : pointer) + ": "));
    CHECK_THAT(msg, Catch::Contains(c["message"].get<std::string>()));
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("rule errors name the line", "[rules]") {
  std::string text = R"({
  "version": 1,
  "description": "two passes",
  "passes": [
    {"pass": "expand"},
    {
      "pass": "expand",
      "select": {"op_type": "Layer", "nmae": "x"}
    }
  ]
})";
  CHECK_THAT(ruleError(text),
             Catch::StartsWith("r.json:8: /passes/1/select/nmae: unknown key 'nmae' (did you mean 'name'?)"));
  CHECK_THAT(ruleError("{\n  \"version\": 1,\n  \"passes\": [\n    {\"pass\": \"expand\",}\n  ]\n}"),
             Catch::StartsWith("r.json:4: not valid JSON"));
  CHECK_THAT(ruleError("{\"version\": 1, \"passes\": [{\"pass\": \"expand\", \"select\": {\"scope\": \"/a[b/\"}}]}"),
             Catch::Contains("/passes/0/select/scope: scope '/a[b/' has an unclosed '['"));
  // The pointer names the key, in a list too.
  CHECK_THAT(ruleError("{\"version\": 1, \"passes\": [{\"pass\": \"expand\", \"select\": [{\"op_type\": \"A\"}, "
                       "{\"name_regex\": \"(x\"}]}]}"),
             Catch::Contains("/passes/0/select/1/name_regex: name_regex '(x' is not a valid regex"));
}

TEST_CASE("a valid rule file becomes typed passes", "[rules]") {
  auto rules = parseRules(R"({"version": 1, "description": "d", "passes": [
    {"pass": "expand", "select": [{"op_type": "A"}, {"name": "/x/*", "domain": "f"}], "schema_ops": "all"},
    {"pass": "expand", "exclude": {"name_regex": "a.*"}, "schema_ops": ["Celu"], "convert_opset": true}
  ]})",
                          "r.json");
  CHECK(rules.description == "d");
  REQUIRE(rules.passes.size() == 2);
  CHECK(rules.passes[0]->name() == "expand");
  CHECK(rules.passes[1]->name() == "expand");
  // The entries' options as the pass reads them.
  RuleContext where{"r.json", "", {}};
  auto first = passes::expandOptionsFromJson(
      nlohmann::json::parse(
          R"({"pass": "expand", "select": [{"op_type": "A"}, {"name": "/x/*", "domain": "f"}], "schema_ops": "all"})"),
      where, "/passes/0");
  REQUIRE(first.select.any.size() == 2);
  CHECK(first.select.any[0].opType == "A");
  CHECK(first.select.any[1].name == "/x/*");
  CHECK(first.select.any[1].domain == "f");
  CHECK(first.schemaAll);
  CHECK(first.calls);
  auto second = passes::expandOptionsFromJson(
      nlohmann::json::parse(
          R"({"pass": "expand", "exclude": {"name_regex": "a.*"}, "schema_ops": ["Celu"], "convert_opset": true})"),
      where, "/passes/1");
  CHECK(second.select.empty());
  REQUIRE(second.exclude.any.size() == 1);
  CHECK(second.exclude.any[0].nameRegex == "a.*");
  CHECK_FALSE(second.schemaAll);
  CHECK(second.schemaOps == std::vector<std::string>{"Celu"});
  CHECK(second.convertOpset);
}

TEST_CASE("the bundled schema is self-contained", "[rules]") {
  auto bundled = ruleFileSchema();
  std::string text = bundled.dump();
  CHECK(text.find("passes/expand.schema.json") == std::string::npos);
  // Every registered pass, from its own schema file, in the pass list.
  std::set<std::string> refs;
  for (const auto& r : bundled["$defs"]["pass"]["oneOf"]) refs.insert(r["$ref"].get<std::string>());
  for (const PassSpec* p : registeredPasses()) {
    CHECK(bundled["$defs"].contains(p->name));
    CHECK(refs.count("#/$defs/" + p->name));
  }
  CHECK(refs.size() == registeredPasses().size());
  CHECK(bundled["$defs"]["expand"]["properties"]["select"]["$ref"] == "#/$defs/selectors");
  SchemaSet selfContained;
  selfContained.add("bundled.json", bundled);
  CHECK_FALSE(selfContained.validate(nlohmann::json::parse(R"({"version": 1, "passes": [{"pass": "expand"}]})"),
                                     "bundled.json"));
  CHECK(selfContained.validate(nlohmann::json::parse(R"({"version": 1, "passes": [{"pass": "expand", "x": 1}]})"),
                               "bundled.json"));
}

TEST_CASE("line lookup and suggestions", "[rules]") {
  std::string text = "{\n \"a\": [\n  1,\n  {\"b/c\": 2}\n ]\n}";
  CHECK(lineOfPointer(text, "") == 1);
  CHECK(lineOfPointer(text, "/a") == 2);
  CHECK(lineOfPointer(text, "/a/1/b~1c") == 4);
  CHECK(lineOfPointer(text, "/a/1/missing") == 4);
  CHECK(didYouMean("selct", {"select", "exclude"}) == "select");
  CHECK_FALSE(didYouMean("zzzzzz", {"select", "exclude"}).has_value());
}

TEST_CASE("the schema validator refuses schemas using keywords it does not implement", "[rules]") {
  SchemaSet set;
  CHECK_THROWS_WITH(
      set.add("x.json", nlohmann::json::parse(R"({"type": "object", "properties": {"a": {"exclusiveMinimum": 0}}})")),
      Catch::Contains("/properties/a: schema keyword 'exclusiveMinimum' is not implemented"));
  set.add("y.json", nlohmann::json::parse(R"({"type": "integer", "minimum": 1, "maximum": 3})"));
  CHECK(set.validate(2, "y.json") == std::nullopt);
  CHECK(set.validate(0, "y.json")->message == "must be at least 1");
  CHECK(set.validate(4, "y.json")->message == "must be at most 3");
}
