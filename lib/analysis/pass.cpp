#include "analysis/pass.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

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

RegisterPass::RegisterPass(PassSpec spec) {
  Registry& r = registry();
  if (spec.name.empty() || !spec.create || spec.schema.empty())
    throw std::logic_error("pass registration without a name, a schema or a factory");
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
