// expand: inline model-local functions, ai.graphcore::Call callees and, when
// asked, standard ops that have a function body in ONNX's schema registry.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pass/pass.h"
#include "pass/selector.h"

namespace graphrw::passes {

inline constexpr const char* kExpandPass = "expand";

// The defaults are the pass's declared ones (expand.cpp).
struct ExpandOptions {
  bool calls = true;  // inline calls at all (false: schema ops only; not a rule-file option)
  SelectorSet select;  // calls to inline; empty: every call
  SelectorSet exclude;  // never inlined (calls and schema ops)
  bool schemaAll = false;  // --schema-ops all
  std::vector<std::string> schemaOps;  // --schema-ops OP,OP
  bool convertOpset =
      optionDefaultAs<bool>(kExpandPass, "convert_opset");  // convert bodies whose ai.onnx version differs
  bool allowNoMatch = optionDefaultAs<bool>(kExpandPass, "allow_no_match");
  uint64_t maxNodes = optionDefaultAs<uint64_t>(kExpandPass, "max_nodes");  // refuse an expansion creating more nodes
};

std::unique_ptr<Pass> createExpandPass(ExpandOptions options);
// From a rule-file entry valid against the pass's schema.
ExpandOptions expandOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer);

}  // namespace graphrw::passes
