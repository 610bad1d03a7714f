// Internals of lib/pattern shared by its two files: the match graph
// compiled to indices, and the comparisons of pattern constants.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fold/fold.h"

namespace graphrw::pattern_detail {

bool sameDomain(const std::string& a, const std::string& b);
// The elements as doubles, for the numeric types constants come in.
std::optional<std::vector<double>> numbers(const HostTensor& t);
// Whether the graph's constant `t` is the pattern's constant `p`.
bool sameConstant(const HostTensor& p, const HostTensor& t);

// What a pattern node's input reads.
struct Ref {
  enum Kind { Empty, Formal, Constant, Output, Undefined } kind = Undefined;
  int index = -1;  // the formal, the Constant node or the producing node
  int output = 0;  // which output of the producing node
};

struct CompiledNode {
  std::string op, domain;
  std::vector<std::pair<std::string, std::string>> attributes;  // name, serialised AttributeProto
  std::vector<Ref> inputs;
  size_t outputs = 0;
  bool commutative = false;  // Add and Mul with two inputs, when the rule allows it
  bool constant = false;  // an ai.onnx Constant: matches constants, not nodes
  std::optional<HostTensor> value;  // its value (none: matches nothing)
};

struct CompiledPattern {
  std::vector<CompiledNode> nodes;
  std::vector<std::string> formals;
  int anchor = -1;
  // A match's values by slot (PatternMatch::values): one slot per distinct
  // name, the formals' first, then each node's outputs.
  std::map<std::string, int> slots;
  std::vector<int> formalSlots;  // per formal (the match's inputs)
  std::vector<std::vector<int>> outputSlots;  // per node, per output
  std::vector<int> resultSlots;  // the match's outputs
};

}  // namespace graphrw::pattern_detail
