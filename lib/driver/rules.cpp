#include "driver/rules.h"

#include "driver/json_schema.h"
#include "support/error.h"
#include "support/text_file.h"

namespace graphrw {

using nlohmann::json;

constexpr int kMaxRuleDepth = 64;

std::unique_ptr<Pass> buildPass(const PassSpec& spec, const json& entry, const RuleContext& where,
                                const std::string& pointer) {
  if (auto e = SchemaSet::builtin().validate(entry, spec.schema))
    usageError(where.at(pointer + e->pointer) + ": " + e->message);
  return spec.create(entry, where, pointer);
}

RuleFile parseRules(const std::string& text, const std::string& displayName) {
  RuleContext rules{displayName, text, {}};
  json doc;
  // Nesting is checked while parsing: a rule file is a few levels deep, and a
  // hostile one 100,000 deep must not exhaust the stack anywhere later.
  struct TooDeep {};
  auto limitDepth = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxRuleDepth) throw TooDeep{};
    return true;
  };
  try {
    doc = json::parse(text, limitDepth);
  } catch (const TooDeep&) {
    usageError(displayName + ": nested more than " + std::to_string(kMaxRuleDepth) + " levels deep; not a rule file");
  } catch (const json::parse_error& e) {
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + std::min(e.byte, text.size()), '\n'));
    std::string what = e.what();
    what = what.substr(what.find(':') + 2);  // drop nlohmann's "[json.exception.parse_error.101] parse error at ..."
    usageError(displayName + ":" + std::to_string(line) + ": not valid JSON: " + what);
  } catch (const json::exception& e) {  // a number too large for a double, ...
    std::string what = e.what();
    usageError(displayName + ": not valid JSON: " + what.substr(what.find(']') + 2));
  }
  auto fail = [&](const std::string& pointer, const std::string& message) { usageError(rules.at(pointer) + ": " + message); };

  // The file's frame first (passes are checked one by one below, against their own schema).
  json frame = doc;
  if (frame.is_object() && frame.contains("passes") && frame["passes"].is_array()) frame["passes"] = json::array();
  if (auto e = SchemaSet::builtin().validate(frame, "rules.schema.json")) fail(e->pointer, e->message);

  RuleFile result;
  result.description = doc.value("description", "");
  std::vector<std::string> names;
  for (const PassSpec* p : registeredPasses()) names.push_back(p->name);
  for (size_t i = 0; i < doc["passes"].size(); ++i) {
    const json& entry = doc["passes"][i];
    std::string pointer = "/passes/" + std::to_string(i);
    if (!entry.is_object()) fail(pointer, "must be an object");
    if (!entry.contains("pass")) fail(pointer, "missing required key 'pass'");
    if (!entry["pass"].is_string()) fail(pointer + "/pass", "must be a string");
    std::string name = entry["pass"].get<std::string>();
    const PassSpec* spec = findPass(name);
    if (!spec) {
      std::string msg = "unknown pass '" + name + "'";
      if (auto near = didYouMean(name, names)) msg += " (did you mean '" + *near + "'?)";
      fail(pointer + "/pass", msg);
    }
    result.passes.push_back(buildPass(*spec, entry, rules, pointer));
  }
  return result;
}

std::string readRulesText(const std::string& path) { return readTextFile(path, "rule file"); }

RuleFile loadRules(const std::string& path) { return parseRules(readRulesText(path), path); }

json ruleFileSchema() {
  SchemaSet set = SchemaSet::builtin();
  json rules = set.document("rules.schema.json");
  json oneOf = json::array();
  for (const PassSpec* p : registeredPasses()) oneOf.push_back({{"$ref", p->schema}});
  rules["$defs"]["pass"] = {{"oneOf", oneOf}};
  set.add("rules.schema.json", std::move(rules));
  return set.bundle("rules.schema.json");
}

}  // namespace graphrw
