// outline: compile a repeated block once and reuse it. Blocks become
// ai.graphcore::Call nodes sharing one callee per distinct body (PopART), or
// model-local functions (any ONNX backend), or get `__outline` keys for
// PopART's own outliner.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/pass.h"
#include "analysis/selector.h"

namespace graphrw::passes {

struct OutlineOptions {
  enum class Mode { Call, Attributes, Function };
  SelectorSet select;
  Mode mode = Mode::Call;
  std::vector<std::pair<std::string, std::string>> keys;  // attributes mode: the __outline pairs
  std::string domain = "graphrw.outlined";                // function mode: the functions' domain
  bool allowNoMatch = false;
};

std::unique_ptr<Pass> createOutlinePass(OutlineOptions options);
OutlineOptions outlineOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer);
OutlineOptions::Mode parseOutlineMode(const std::string& text);

}  // namespace graphrw::passes
