// pattern: declarative multi-node rewrites. Each rule is a small match graph
// and a replacement, both ONNX functions in textual syntax (lib/analysis/
// pattern.h says how they match), with constraints: which match inputs must
// be weights (initializers) or constants, and whether Add/Mul match in either
// order. Rules apply in order, matches never overlap, and replacement ops
// that compute only from weights (Concat, Transpose, ...) are folded into new
// initializers at rewrite time, a weight shared by several matches once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pass/pass.h"
#include "pattern/pattern.h"

namespace graphrw::passes {

struct PatternRule {
  std::string where;  // names the rule in messages
  onnx::FunctionProto match, replace;
  PatternConstraints constraints;
  int64_t minOpset = 0, maxOpset = INT64_MAX;  // the graphs' ai.onnx versions the rule applies to
  bool allowNoMatch = false;  // the rule's own "allow_no_match": matching nothing is fine
  // Alternatives: rules of one library pass that allows no match (its file and
  // pass, "" for none); matching nothing is an error only for all of them.
  std::string group;
};

inline constexpr const char* kPatternPass = "pattern";

// The defaults are the pass's declared ones (pattern.cpp).
struct PatternOptions {
  std::vector<PatternRule> rules;
  bool allowNoMatch = optionDefaultAs<bool>(kPatternPass, "allow_no_match");  // a rule matching nothing is a warning
  bool fold = optionDefaultAs<bool>(kPatternPass, "fold");  // fold replacement ops on weights into initializers
  uint64_t maxMatchSteps = optionDefaultAs<uint64_t>(kPatternPass, "max_match_steps");  // per match attempt
};

std::unique_ptr<Pass> createPatternPass(PatternOptions options);

}  // namespace graphrw::passes
