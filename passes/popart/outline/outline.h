// outline: compile a repeated block once and reuse it. Blocks become
// ai.graphcore::Call nodes sharing one callee per distinct body (PopART), or
// model-local functions (any ONNX backend), or get `__outline` keys for
// PopART's own outliner.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pass/pass.h"
#include "pass/selector.h"

namespace graphrw::passes {

inline constexpr const char* kOutlinePass = "outline";

// The defaults are the pass's declared ones (outline_options.cpp).
struct OutlineOptions {
  enum class Mode { Call, Attributes, Function };
  SelectorSet select;
  Mode mode = parseMode(optionDefaultAs<std::string>(kOutlinePass, "mode"));
  std::vector<std::pair<std::string, std::string>> keys;  // attributes mode: the __outline pairs
  std::string domain = optionDefaultAs<std::string>(kOutlinePass, "domain");  // function mode: the functions' domain
  bool allowNoMatch = optionDefaultAs<bool>(kOutlinePass, "allow_no_match");

  static Mode parseMode(const std::string& text);
  // Usage errors for options that do not go together (a selector is needed; keys only in attributes mode).
  void check() const;
};

std::unique_ptr<Pass> createOutlinePass(OutlineOptions options);
OutlineOptions outlineOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer);

}  // namespace graphrw::passes
