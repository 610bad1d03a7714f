// Rule files: {"version": 1, "description": ..., "passes": [{"pass": NAME, ...options}]}.
// Everything is checked, against schemas/rules.schema.json and each pass's own
// schema, and parsed into typed options before any pass runs. Errors are one
// line: FILE:LINE: /json/pointer: what is wrong.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pass.h"

namespace graphrw {

// Where a rule-file value is, for messages.
struct RuleContext {
  std::string file;
  std::string text;
  std::string at(const std::string& pointer) const;  // "FILE:LINE: POINTER"
};

// One entry per pass: its name, its schema file below schemas/, and how its
// options are read (the JSON is already valid against that schema).
struct PassInfo {
  std::string name;
  std::string schema;
  std::function<std::unique_ptr<Pass>(const nlohmann::json& options, const RuleContext& rules, const std::string& pointer)>
      fromJson;
};
const std::vector<PassInfo>& registeredPasses();

struct RuleFile {
  std::string description;
  std::vector<std::unique_ptr<Pass>> passes;
};

// Throws Error(Usage) with one line naming the file, the line and the pointer.
RuleFile loadRules(const std::string& path);
// The rule file's text; throws Error(Usage) when it cannot be read.
std::string readRulesText(const std::string& path);
RuleFile parseRules(const std::string& text, const std::string& displayName);

}  // namespace graphrw
