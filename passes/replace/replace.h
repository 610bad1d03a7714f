// replace: swap matched ops for another op (attributes kept where the target
// accepts them, set, renamed; inputs and outputs mapped; constant inputs added)
// or for a small template graph in ONNX's textual function syntax, inlined at
// each match; weight layout changes in templates are folded into new initializers.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fold/fold.h"
#include "pass/pass.h"
#include "pass/selector.h"
#include "passes/replace/template_check.h"

namespace graphrw::passes {

struct ReplaceInput {
  enum class Kind { Index, Missing, Constant };
  Kind kind = Kind::Index;
  size_t index = 0;  // Kind::Index: the matched node's input
  HostTensor constant;  // Kind::Constant: written as an initializer
};

struct Replacement {
  SelectorSet select;
  std::string where;  // names the rule in messages ("rules.json:7: /passes/0/replacements/1", "--with ...")
  // Op replacement.
  std::string domain, opType;
  int64_t version = 0;  // 0: the version the scope imports (ai.graphcore: 1)
  std::vector<std::pair<std::string, nlohmann::json>> set;
  std::vector<std::pair<std::string, std::string>> rename;
  // Attributes the target does not take whose values may go although they
  // differ from the op's default (the maths may change: the rule says so).
  std::vector<std::string> drop;
  std::optional<std::vector<ReplaceInput>> inputs;
  std::optional<std::vector<int>> outputs;  // new output i = old output outputs[i]; -1: a new, unused value
  // Template replacement (ONNX textual function syntax, attribute references as `name = @formal`).
  std::optional<onnx::FunctionProto> templ;
  bool isTemplate() const { return templ.has_value(); }
};

inline constexpr const char* kReplacePass = "replace";

// The defaults are the pass's declared ones (replace.cpp).
struct ReplaceOptions {
  std::vector<Replacement> replacements;  // applied in order
  bool allowUnknownOp = optionDefaultAs<bool>(kReplacePass, "allow_unknown_op");  // write a target op no schema knows
  bool allowNoMatch = optionDefaultAs<bool>(kReplacePass, "allow_no_match");  // a selector matching nothing: a warning
  bool quietNoMatch = false;  // with allowNoMatch: not even a warning (replacements run as part of another pass)
  bool fold =
      optionDefaultAs<bool>(kReplacePass, "fold");  // fold template ops computing only from initializers and constants
  // Initializers are parameters: template ops on them stay ops, constants are Constant nodes.
  bool keepParameters = optionDefaultAs<bool>(kReplacePass, "keep_parameters");
};

std::unique_ptr<Pass> createReplacePass(ReplaceOptions options);
ReplaceOptions replaceOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer);

// "[DOMAIN::]OP[:VERSION]" into the replacement's target. Throws Error(Usage).
void parseTarget(const std::string& text, Replacement& r);
// A template's text: ONNX function syntax, `attr = @formal` references allowed.
onnx::FunctionProto parseTemplate(const std::string& text, const std::string& where,
                                  TemplateRole role = TemplateRole::Replacement);
// A constant input from JSON: {"constant": number or (nested) list, "type": "float", "dims": [...]}.
ReplaceInput constantInput(const nlohmann::json& j, const std::string& where);
// An inputs list from JSON: integers (the node's input), null (missing), constants.
std::vector<ReplaceInput> inputsFromJson(const nlohmann::json& j, const std::string& where);

}  // namespace graphrw::passes
