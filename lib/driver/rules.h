// Rule files: {"version": 1, "description": ..., "passes": [{"pass": NAME, ...options}]}.
// Everything is checked, against schemas/rules.schema.json and each pass's own
// schema, and every pass is built before any pass runs. Errors are one line:
// FILE:LINE: /json/pointer: what is wrong. A command line goes through
// buildPass() too, with its flags as the entry.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pass/pass.h"

namespace graphrw {

struct RuleFile {
  std::string description;
  std::vector<std::shared_ptr<const Pass>> passes;  // immutable: shared by every model of a batch
};

// Throws Error(Usage) with one line naming the file, the line and the pointer.
RuleFile loadRules(const std::string& path);
// The rule file's text; throws Error(Usage) when it cannot be read.
std::string readRulesText(const std::string& path);
RuleFile parseRules(const std::string& text, const std::string& displayName);

// One pass from its entry ({"pass": NAME, ...}): validated against the pass's
// schema, then built by its factory. `pointer` is the entry's place in its
// rule file ("" for a command line).
std::unique_ptr<Pass> buildPass(const PassSpec& spec, const nlohmann::json& entry, const RuleContext& where,
                                const std::string& pointer);

// The rule-file schema with every registered pass's schema, as one document (`graphrw schema`).
nlohmann::json ruleFileSchema();

// The options table of a pass in Markdown (key, flag, value, default,
// description), between the markers docs/passes/NAME.md keeps it in:
// "<!-- options: NAME -->" ... "<!-- /options -->". `graphrw schema --markdown`
// prints every pass's; a test checks docs/passes/NAME.md holds exactly these.
std::string optionsMarkdown(const PassSpec& spec);

}  // namespace graphrw
