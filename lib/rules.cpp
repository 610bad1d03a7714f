#include "rules.h"

#include <fstream>
#include <sstream>

#include "error.h"
#include "checkpoint.h"
#include "expand.h"
#include "outline.h"
#include "replace.h"
#include "json_schema.h"

namespace graphrw {

using nlohmann::json;

std::string RuleContext::at(const std::string& pointer) const {
  size_t line = lineOfPointer(text, pointer);
  return file + (line ? ":" + std::to_string(line) : "") + ": " + (pointer.empty() ? "/" : pointer);
}

const std::vector<PassInfo>& registeredPasses() {
  // The one list of passes rule files can name.
  static const std::vector<PassInfo> passes = {
      {"expand", "passes/expand.schema.json",
       [](const json& j, const RuleContext& rules, const std::string& pointer) {
         return passes::createExpandPass(passes::expandOptionsFromJson(j, rules, pointer));
       }},
      {"replace", "passes/replace.schema.json",
       [](const json& j, const RuleContext& rules, const std::string& pointer) {
         return passes::createReplacePass(passes::replaceOptionsFromJson(j, rules, pointer));
       }},
      {"outline", "passes/outline.schema.json",
       [](const json& j, const RuleContext& rules, const std::string& pointer) {
         return passes::createOutlinePass(passes::outlineOptionsFromJson(j, rules, pointer));
       }},
      {"checkpoint", "passes/checkpoint.schema.json",
       [](const json& j, const RuleContext& rules, const std::string& pointer) {
         return passes::createCheckpointPass(passes::checkpointOptionsFromJson(j, rules, pointer));
       }},
  };
  return passes;
}

RuleFile parseRules(const std::string& text, const std::string& displayName) {
  RuleContext rules{displayName, text};
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + std::min(e.byte, text.size()), '\n'));
    std::string what = e.what();
    what = what.substr(what.find(':') + 2);  // drop nlohmann's "[json.exception.parse_error.101] parse error at ..."
    usageError(displayName + ":" + std::to_string(line) + ": not valid JSON: " + what);
  }
  const SchemaSet& schemas = SchemaSet::builtin();
  auto fail = [&](const SchemaError& e) { usageError(rules.at(e.pointer) + ": " + e.message); };

  // The file's frame first (passes are checked one by one below, against their own schema).
  json frame = doc;
  if (frame.is_object() && frame.contains("passes") && frame["passes"].is_array()) frame["passes"] = json::array();
  if (auto e = schemas.validate(frame, "rules.schema.json")) fail(*e);

  RuleFile result;
  result.description = doc.value("description", "");
  const auto& list = registeredPasses();
  std::vector<std::string> names;
  for (const auto& p : list) names.push_back(p.name);
  for (size_t i = 0; i < doc["passes"].size(); ++i) {
    const json& entry = doc["passes"][i];
    std::string pointer = "/passes/" + std::to_string(i);
    if (!entry.is_object()) fail({pointer, "must be an object"});
    if (!entry.contains("pass")) fail({pointer, "missing required key 'pass'"});
    if (!entry["pass"].is_string()) fail({pointer + "/pass", "must be a string"});
    std::string name = entry["pass"].get<std::string>();
    auto info = std::find_if(list.begin(), list.end(), [&](const PassInfo& p) { return p.name == name; });
    if (info == list.end()) {
      std::string msg = "unknown pass '" + name + "'";
      if (auto near = didYouMean(name, names)) msg += " (did you mean '" + *near + "'?)";
      fail({pointer + "/pass", msg});
    }
    if (auto e = schemas.validate(entry, info->schema)) fail({pointer + e->pointer, e->message});
    result.passes.push_back(info->fromJson(entry, rules, pointer));
  }
  return result;
}

std::string readRulesText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) usageError(path + ": cannot read the rule file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RuleFile loadRules(const std::string& path) { return parseRules(readRulesText(path), path); }

}  // namespace graphrw
