// Multi-node rewrites as data: a match graph and a replacement, both ONNX
// functions (textual syntax). The match's formal inputs bind to any value;
// its Constant nodes match constants (initializers or Constant nodes) of the
// same value (to a relative 1e-6, any shape holding one element matching a
// scalar); every other node matches a node of the same domain and op type
// whose inputs match in turn (Add and Mul in either order); attributes the
// match node sets must be equal. The values between matched nodes must have
// no reader outside the match and must not be graph outputs. Matches do not
// overlap and are taken in graph order; each is replaced by the replacement
// body, inlined with the match's bound inputs and outputs. `attr = @x` in the
// replacement, x a match input, takes the value of the constant x binds to.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/rewriter.h"
#include "support/pointer_set.h"
#include "support/small_vector.h"

namespace graphrw {

namespace pattern_detail {
struct CompiledPattern;
}

// The budget of one match attempt (a step: a pattern node tried on a graph
// node), beyond which find() stops with Error(Unsupported).
inline constexpr uint64_t kDefaultMaxMatchSteps = 100000;
// The largest match graph: the search recurses along it.
inline constexpr int kMaxMatchNodes = 2000;

struct PatternConstraints {
  std::vector<std::string>
      weights;  // match inputs that must be initializers (not graph inputs), maybe through Identity
  std::vector<std::string> constants;  // match inputs that must be constants (initializers or Constant outputs)
  bool commutative = true;  // Add and Mul match with their inputs in either order
};

// One match: the graph value bound to each of the pattern's values (by
// slot: its inputs, then each node's outputs) and the graph node bound to
// each of its nodes (by index); nullptr where none is. Two flat arrays, not
// maps: a million-node graph can have half a million matches held at once,
// and most patterns bind a few values and nodes, held inline (64 bytes a
// match, not 48 and two heap blocks). Held in a deque: apply() frees each
// block of matches as it goes, so their memory serves the replacements.
struct PatternMatch {
  SmallVector<ir::Value*, 4> values;
  SmallVector<ir::Node*, 2> nodes;
};
using PatternMatches = std::deque<PatternMatch>;

class Pattern {
 public:
  // Throws Error(Usage) prefixed with `where` when the match is not usable
  // (no node, more than kMaxMatchNodes, an output not produced by a node,
  // arities that differ, a constraint naming no input).
  Pattern(onnx::FunctionProto match, onnx::FunctionProto replacement, std::string where,
          PatternConstraints constraints = {});
  ~Pattern();
  Pattern(Pattern&&) noexcept;

  const std::string& name() const { return match_.name(); }
  const std::string& where() const { return where_; }
  // The graph node a match bound to the pattern node producing the first output.
  const ir::Node* anchor(const PatternMatch& m) const { return m.nodes.at(anchor_); }

  // The matches in `g` (not its subgraphs): complete, non-overlapping, in
  // graph order of the node producing the first output. `taken`: nodes other
  // patterns matched already, left alone (and extended with these matches').
  // Each match attempt may take `maxSteps` steps (then Error(Unsupported)).
  PatternMatches find(ir::Graph& g, FlatPointerSet<ir::Node>& taken, uint64_t maxSteps = kDefaultMaxMatchSteps) const;
  // Replaces the matches in order, consuming them (`matches` ends empty);
  // returns the nodes the replacements created.
  std::vector<ir::Node*> apply(ir::Model& model, ir::Rewriter& rw, ir::Graph& g, PatternMatches& matches) const;
  // find + apply; returns how many matches.
  size_t rewrite(ir::Model& model, ir::Rewriter& rw, ir::Graph& g, uint64_t maxSteps = kDefaultMaxMatchSteps) const;

 private:
  void compile();
  bool complete(PatternMatch& b) const;
  onnx::AttributeProto attributeFromConstant(const std::string& formal, int type, const PatternMatch& b) const;
  ir::Value*& bound(PatternMatch& b, const std::string& formal) const;

  onnx::FunctionProto match_, replacement_;
  std::string where_;
  PatternConstraints constraints_;
  int anchor_ = -1;  // the node producing the match's first output
  std::map<std::string, int> attributeRefs_;  // match input -> attribute type, for `attr = @input` in the replacement
  std::unique_ptr<pattern_detail::CompiledPattern> compiled_;
};

}  // namespace graphrw
