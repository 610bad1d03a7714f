#include "pass/selector.h"

#include <fnmatch.h>

#include "support/error.h"

namespace graphrw {

namespace {

// A selector's keys, as rule files and command lines spell them (the schema's
// $defs/selector lists the same), and where each is kept.
constexpr std::pair<const char*, std::optional<std::string> Selector::*> kKeys[] = {
    {"name", &Selector::name},
    {"name_regex", &Selector::nameRegex},
    {"op_type", &Selector::opType},
    {"domain", &Selector::domain},
    {"scope", &Selector::scope}};
constexpr const char* kKeyList = "name, name_regex, op_type, domain, scope";
// Longer regexes are refused: the compiler recurses on the pattern's nesting.
constexpr size_t kMaxRegexLength = 1000;

std::optional<std::string>* slotOf(Selector& s, const std::string& key) {
  for (const auto& [name, member] : kKeys)
    if (key == name) return &(s.*member);
  return nullptr;
}

}  // namespace

bool globMatch(const std::string& pattern, const char* text, bool crossSlash) {
  return fnmatch(pattern.c_str(), text, crossSlash ? 0 : FNM_PATHNAME) == 0;
}

Selector Selector::parse(const std::string& text) {
  Selector s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = part.find('=');
    if (eq == std::string::npos)
      usageError("selector '" + text + "': '" + part + "' is not key=value (keys: " + kKeyList + ")");
    std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    std::optional<std::string>* slot = slotOf(s, key);
    if (!slot) usageError("selector '" + text + "': unknown key '" + key + "' (keys: " + kKeyList + ")");
    if (slot->has_value()) usageError("selector '" + text + "': key '" + key + "' given twice");
    *slot = value;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  s.compile("selector '" + text + "'");
  return s;
}

SelectorSet SelectorSet::fromJson(const nlohmann::json& j, const std::function<std::string(const std::string&)>& at,
                                  const std::string& pointer) {
  SelectorSet set;
  // Errors point at the key that is wrong (/passes/0/select/name_regex).
  auto one = [&](const nlohmann::json& item, const std::string& p) {
    Selector s;
    for (const auto& [key, member] : kKeys)
      if (item.contains(key)) s.*member = item[key].get<std::string>();
    s.compile([&](const char* key) { return at(*key ? p + "/" + key : p); });
    return s;
  };
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) set.any.push_back(one(j[i], pointer + "/" + std::to_string(i)));
  else
    set.any.push_back(one(j, pointer));
  return set;
}

void Selector::compile(const std::string& where) {
  compile([&](const char*) { return where; });
}

void Selector::compile(const std::function<std::string(const char* key)>& whereOf) {
  if (empty()) usageError(whereOf("") + ": a selector needs at least one key");
  auto checkGlob = [&](const std::optional<std::string>& g, const char* key) {
    if (!g) return;
    if (g->empty()) usageError(whereOf(key) + ": " + key + " is empty");
    int open = 0;
    for (size_t i = 0; i < g->size(); ++i) {
      char c = (*g)[i];
      if (c == '\\')
        ++i;
      else if (c == '[')
        ++open;
      else if (c == ']' && open > 0)
        --open;
    }
    if (open != 0) usageError(whereOf(key) + ": " + key + " '" + *g + "' has an unclosed '['");
  };
  checkGlob(name, "name");
  checkGlob(scope, "scope");
  if (opType && opType->empty()) usageError(whereOf("op_type") + ": op_type is empty");
  if (nameRegex) {
    if (nameRegex->size() > kMaxRegexLength)
      usageError(whereOf("name_regex") + ": name_regex is " + std::to_string(nameRegex->size()) +
                 " characters long (at most " + std::to_string(kMaxRegexLength) + ")");
    try {
      // __polynomial (libstdc++): the breadth-first matcher, linear in the
      // name and with no recursion per character (the default one overflows
      // the stack on a 200k-character node name); back-references are refused.
      compiledRegex.emplace(*nameRegex, std::regex::ECMAScript | std::regex_constants::__polynomial);
    } catch (const std::regex_error& e) {
      usageError(whereOf("name_regex") + ": name_regex '" + *nameRegex + "' is not a valid regex (" + e.what() + ")");
    }
  }
}

std::optional<std::string> Selector::scopeOf(std::string_view nodeName) const {
  if (!scope) return std::nullopt;
  // Candidate prefixes end at a '/' boundary (or are the whole name). A
  // scope's '*', '?' and brackets never match '/', so a matching prefix holds
  // exactly as many '/' as the glob has outside brackets: at most two
  // candidates (ending with the k-th '/', or just before the next one), which
  // keeps this linear in the name however many '/' it has.
  size_t k = 0, open = 0;
  for (size_t i = 0; i < scope->size(); ++i) {
    char c = (*scope)[i];
    if (c == '\\' && i + 1 < scope->size()) {
      k += (*scope)[++i] == '/' && !open;
    } else if (c == '[') {
      ++open;
    } else if (c == ']' && open) {
      --open;
    } else if (c == '/' && !open) {
      ++k;
    }
  }
  size_t afterK = 0, slashes = 0, next = nodeName.size();
  for (size_t i = 0; i < nodeName.size(); ++i) {
    if (nodeName[i] != '/') continue;
    if (slashes == k) {
      next = i;
      break;
    }
    if (++slashes == k) afterK = i + 1;
  }
  if (slashes < k) return std::nullopt;
  for (size_t end : {afterK, next}) {
    if (end == 0 || end > nodeName.size()) continue;
    std::string prefix(nodeName.substr(0, end));
    if (globMatch(*scope, prefix.c_str(), false)) return prefix;
  }
  return std::nullopt;
}

bool Selector::matches(const ir::Node& node) const {
  if (opType && node.opType() != *opType) return false;
  if (domain) {
    bool both = ir::isDefaultDomain(*domain) && ir::isDefaultDomain(node.domain());
    if (!both && node.domain() != *domain) return false;
  }
  return namePartsMatch(node.name().c_str());
}

bool Selector::namePartsMatch(const char* text) const {
  if (name && !globMatch(*name, text, true)) return false;
  if (compiledRegex && !std::regex_match(text, *compiledRegex)) return false;
  if (scope && !scopeOf(text)) return false;
  return true;
}

bool Selector::matchesName(const std::string& text) const { return !opType && !domain && namePartsMatch(text.c_str()); }

bool Selector::empty() const {
  for (const auto& [key, member] : kKeys)
    if (this->*member) return false;
  return true;
}

std::string Selector::str() const {
  std::string s;
  for (const auto& [key, member] : kKeys)
    if (this->*member) s += (s.empty() ? "" : ",") + std::string(key) + "=" + *(this->*member);
  return s;
}

nlohmann::json Selector::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, member] : kKeys)
    if (this->*member) j[key] = *(this->*member);
  return j;
}

bool SelectorSet::matches(const ir::Node& node) const {
  for (const auto& s : any)
    if (s.matches(node)) return true;
  return false;
}

std::string SelectorSet::str() const {
  std::string s;
  for (const auto& sel : any) s += (s.empty() ? "" : " | ") + sel.str();
  return s;
}

}  // namespace graphrw
