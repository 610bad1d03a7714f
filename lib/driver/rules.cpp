#include "driver/rules.h"

#include "pass/json_schema.h"
#include "support/error.h"
#include "support/text_file.h"

namespace graphrw {

using nlohmann::json;

constexpr int kMaxRuleDepth = 64;

std::unique_ptr<Pass> buildPass(const PassSpec& spec, const json& entry, const RuleContext& where,
                                const std::string& pointer) {
  if (auto e = SchemaSet::builtin().validate(entry, spec.schemaPath()))
    usageError(where.at(pointer + e->pointer) + ": " + e->message);
  auto pass = spec.create(spec.withDefaults(entry), where, pointer);
  if (pass->name() != spec.name)
    fail(ExitCode::Internal, "the pass declared as '" + spec.name + "' calls itself '" + pass->name() + "'");
  return pass;
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
  auto fail = [&](const std::string& pointer, const std::string& message) {
    usageError(rules.at(pointer) + ": " + message);
  };

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
  for (const PassSpec* p : registeredPasses()) oneOf.push_back({{"$ref", p->schemaPath()}});
  rules["$defs"]["pass"] = {{"oneOf", oneOf}};
  set.add("rules.schema.json", std::move(rules));
  return set.bundle("rules.schema.json");
}

namespace {

// A value's schema in words: "integer >= 1", "erf | tanh", "selector(s)", ...
std::string describeValue(const json& s) {
  if (!s.is_object()) return "JSON";
  if (s.contains("enum")) {
    std::string out;
    for (const auto& v : s["enum"])
      out += (out.empty() ? "" : " | ") + (v.is_string() ? v.get<std::string>() : v.dump());
    return out;
  }
  if (s.contains("const")) return s["const"].is_string() ? s["const"].get<std::string>() : s["const"].dump();
  if (s.contains("$ref")) {
    std::string ref = s["$ref"].get<std::string>();
    if (ref.ends_with("/selectors")) return "selector(s)";
    return ref.substr(ref.rfind('/') + 1);
  }
  if (s.contains("oneOf")) {
    std::string out;
    for (const auto& alt : s["oneOf"]) out += (out.empty() ? "" : " or ") + describeValue(alt);
    return out;
  }
  std::string type = s.value("type", "");
  if (type == "integer" || type == "number") {
    std::string out = type;
    if (s.contains("minimum") && s.contains("maximum"))
      out += " " + s["minimum"].dump() + ".." + s["maximum"].dump();
    else if (s.contains("minimum"))
      out += " >= " + s["minimum"].dump();
    else if (s.contains("maximum"))
      out += " <= " + s["maximum"].dump();
    return out;
  }
  if (type == "array") return "list of " + describeValue(s.value("items", json::object()));
  if (type == "object" && s.contains("additionalProperties") && s["additionalProperties"].is_object())
    return "map of " + describeValue(s["additionalProperties"]);
  return type.empty() ? "JSON" : type;
}

std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string optionsMarkdown(const PassSpec& spec) {
  std::string out =
      "<!-- options: " + spec.name + " (generated from the pass's declaration: graphrw schema --markdown) -->\n";
  out += "| key | flag | value | default | |\n|---|---|---|---|---|\n";
  for (const OptionSpec& o : spec.options) {
    if (o.key.empty()) continue;
    std::string flag = "";
    for (const OptionSpec& f : spec.options)
      if (!f.flags.empty() &&
          (f.target() == "/" + o.key || (f.key.empty() && f.pointer.starts_with("/" + o.key + "/"))))
        flag += (flag.empty() ? "" : ", ") + ("`" + f.flags + "`");
    out += "| `" + o.key + "`" + (o.required ? " (required)" : "") + " | " + flag + " | " +
           cell(describeValue(o.schema)) + " | " +
           (o.defaultValue.is_null() ? "" : "`" + cell(o.defaultValue.dump()) + "`") + " | " + cell(o.help) + " |\n";
  }
  return out + "<!-- /options -->\n";
}

}  // namespace graphrw
