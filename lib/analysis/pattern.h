// Multi-node rewrites as data: a match graph and a replacement, both ONNX
// functions (textual syntax). The match's formal inputs bind to any value;
// its Constant nodes match constants (initializers or Constant nodes) of the
// same value (to a relative 1e-6, any shape holding one element matching a
// scalar); every other node matches a node of the same domain and op type
// whose inputs match in turn (Add and Mul in either order); attributes the
// match node sets must be equal. The values between matched nodes must have
// no reader outside the match and must not be graph outputs. Matches do not
// overlap and are taken in graph order; each is replaced by the replacement
// body, inlined with the match's bound inputs and outputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

#include "ir.h"
#include "rewriter.h"

namespace graphrw {

class Pattern {
 public:
  // Throws Error(Usage) prefixed with `where` when the match is not usable
  // (no node, an output not produced by a node, a formal unused).
  Pattern(onnx::FunctionProto match, onnx::FunctionProto replacement, std::string where);
  ~Pattern();
  Pattern(Pattern&&) noexcept;

  const std::string& name() const { return match_.name(); }

  // Rewrites every match in `g` (not its subgraphs); returns how many.
  size_t rewrite(ir::Model& model, ir::Rewriter& rw, ir::Graph& g) const;

 private:
  struct Binding;
  bool matchNode(int patternNode, ir::Node* node, Binding& b) const;
  bool matchInput(const std::string& patternValue, ir::Value* value, Binding& b) const;

  onnx::FunctionProto match_, replacement_;
  std::string where_;
  int anchor_ = -1;  // the node producing the match's (first) output
};

}  // namespace graphrw
