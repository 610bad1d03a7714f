// expand: inline model-local functions, ai.graphcore::Call callees and, when
// asked, standard ops that have a function body in ONNX's schema registry.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/pass.h"
#include "analysis/selector.h"

namespace graphrw::passes {

struct ExpandOptions {
  bool calls = true;                  // inline calls at all (false: schema ops only)
  SelectorSet select;                 // calls to inline; empty: every call
  SelectorSet exclude;                // never inlined (calls and schema ops)
  bool schemaAll = false;             // --schema-ops all
  std::vector<std::string> schemaOps; // --schema-ops OP,OP
  bool convertOpset = false;          // convert bodies whose ai.onnx version differs
  bool allowNoMatch = false;          // a selector matching nothing is a warning, not an error
  uint64_t maxNodes = 10'000'000;     // refuse an expansion creating more nodes than this
};

std::unique_ptr<Pass> createExpandPass(ExpandOptions options);
// From a rule-file entry valid against schemas/passes/expand.schema.json.
ExpandOptions expandOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer);

}  // namespace graphrw::passes
