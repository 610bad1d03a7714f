#include "pass/pass.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "support/error.h"
#include "support/json_text.h"

namespace graphrw {

std::string RuleContext::at(const std::string& pointer) const {
  if (describe) return describe(pointer);
  size_t line = lineOfPointer(text, pointer);
  return file + (line ? ":" + std::to_string(line) : "") + ": " + (pointer.empty() ? "/" : pointer);
}

std::filesystem::path RuleContext::baseDir() const {
  return file.empty() ? std::filesystem::path() : std::filesystem::path(file).parent_path();
}

namespace {

struct Registry {
  std::map<std::string, PassSpec, std::less<>> specs;
  std::vector<const PassSpec*> list;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

namespace {

// What a declaration must hold for the schema, the flags and the factory made from it to work.
void checkDeclaration(const PassSpec& spec) {
  auto bad = [&](const std::string& what) { throw std::logic_error("pass '" + spec.name + "': " + what); };
  if (spec.name.empty() || !spec.create) bad("registered without a name or a factory");
  if (spec.summary.empty()) bad("no summary");
  std::set<std::string> keys, flags;
  for (const OptionSpec& o : spec.options) {
    std::string label = o.key.empty() ? o.flags : o.key;
    if (o.key.empty() == o.pointer.empty()) bad(label + ": an option has a key or (a field flag) a pointer, not both");
    if (!o.key.empty() && !keys.insert(o.key).second) bad("key '" + o.key + "' declared twice");
    if (!o.flags.empty() && !flags.insert(o.flags).second) bad("flag '" + o.flags + "' declared twice");
    if (o.key.empty() && o.flags.empty()) bad(o.pointer + ": a field option without a flag");
    if (!o.key.empty() && (!o.schema.is_object() || o.schema.empty())) bad(label + ": no schema");
    if (o.help.empty()) bad(label + ": no help");
    if (o.key == "pass") bad("'pass' is not an option");
    if (!o.defaultValue.is_null() && o.required) bad(label + ": required with a default");
  }
  for (const OptionSpec& o : spec.options) {
    if (o.key.empty()) {
      std::string top = o.pointer.substr(1, o.pointer.find('/', 1) - 1);
      if (!keys.count(top)) bad(o.flags + ": its pointer " + o.pointer + " is under no declared key");
    }
  }
}

}  // namespace

nlohmann::json PassSpec::schema() const {
  nlohmann::json properties = {{"pass", {{"const", name}}}};
  nlohmann::json required = {"pass"};
  for (const OptionSpec& o : options) {
    if (o.key.empty()) continue;
    nlohmann::json s = o.schema;
    s["description"] = o.help;
    if (!o.defaultValue.is_null()) s["default"] = o.defaultValue;
    properties[o.key] = std::move(s);
    if (o.required) required.push_back(o.key);
  }
  nlohmann::json schema = {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", "https://graphrw.invalid/schemas/" + schemaPath()},
      {"title", name + " pass"},
      {"description", description.empty() ? summary : description},
      {"type", "object"},
      {"properties", std::move(properties)},
      {"required", std::move(required)},
      {"additionalProperties", false},
  };
  if (!defs.is_null() && !defs.empty()) schema["$defs"] = defs;
  if (constraints.is_object())
    for (const auto& [k, v] : constraints.items()) schema[k] = v;
  return schema;
}

nlohmann::json PassSpec::withDefaults(nlohmann::json entry) const {
  for (const OptionSpec& o : options)
    if (!o.key.empty() && !o.defaultValue.is_null() && !entry.contains(o.key)) entry[o.key] = o.defaultValue;
  return entry;
}

const OptionSpec& PassSpec::option(std::string_view key) const {
  for (const OptionSpec& o : options)
    if (o.key == key) return o;
  throw std::logic_error("pass '" + name + "' declares no option '" + std::string(key) + "'");
}

const nlohmann::json& optionDefault(std::string_view pass, std::string_view key) {
  const PassSpec* spec = findPass(pass);
  if (!spec) throw std::logic_error("no pass '" + std::string(pass) + "' is registered");
  const OptionSpec& o = spec->option(key);
  if (o.defaultValue.is_null())
    throw std::logic_error("pass '" + std::string(pass) + "' option '" + std::string(key) + "' has no default");
  return o.defaultValue;
}

nlohmann::json withDefaults(std::string_view pass, nlohmann::json entry) {
  const PassSpec* spec = findPass(pass);
  if (!spec) throw std::logic_error("no pass '" + std::string(pass) + "' is registered");
  return spec->withDefaults(std::move(entry));
}

RegisterPass::RegisterPass(PassSpec spec) {
  Registry& r = registry();
  checkDeclaration(spec);
  std::string name = spec.name;
  if (!r.specs.emplace(name, std::move(spec)).second) throw std::logic_error("pass '" + name + "' registered twice");
  r.list.clear();
  for (const auto& [_, s] : r.specs) r.list.push_back(&s);
}

const std::vector<const PassSpec*>& registeredPasses() { return registry().list; }

const PassSpec* findPass(std::string_view name) {
  const auto& specs = registry().specs;
  auto it = specs.find(name);
  return it == specs.end() ? nullptr : &it->second;
}

void reportNoMatch(const std::string& pass, const std::string& what, bool allowNoMatch) {
  std::string msg = pass + ": " + what;
  if (!allowNoMatch) usageError(msg + " (allow_no_match / --allow-no-match makes this a warning)");
  spdlog::warn(msg);
}

}  // namespace graphrw
