// ir::InlineCopier, the inliner's copier (its code: ir/inliner.cpp). Defined
// in a header that every IR header includes (ir/editors.h), so that no other
// code can define a class of this name and so become a friend of the IR.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ir/inliner.h"

namespace graphrw::ir {

// Copies bodies into graphs for inlineBody (ir/inliner.h), its one user: a
// friend of the IR's classes, like the Rewriter. Everything is private.
class InlineCopier {
  friend InlineResult graphrw::inlineBody(ir::Rewriter& rw, ir::Node* call, const ir::Graph& body,
                                          const AttributeEnv& env, const std::string& prefix);

  InlineCopier(Rewriter& rw, const AttributeEnv& env, const std::string& prefix, InlineResult& result)
      : rw_(rw), env_(env), prefix_(prefix), result_(result) {}

  Value* mapped(const Value* v) const;

  Value* freshValue(Graph& target, const Value* inner);

  // A copy of `src` in `target` before `before`; outputs bound in `bound` are adopted.
  Node* node(const Node& src, Graph& target, const Node* before, const std::map<const Value*, Value*>& bound);

  std::optional<Attribute> attribute(const Attribute& a, Graph& owner, Node* node);

  static AttributeInterner& interner(Graph& g);

  // A call's attribute value, copied as it is (its graphs have no body refs).
  Attribute plainCopy(const Attribute& a, Graph& owner, Node* node);

  Attribute deepCopy(const Attribute& a, Graph& owner, Node* node);

  static InlineResult inlineBody(Rewriter& rw, Node* call, const Graph& body, const AttributeEnv& env,
                                 const std::string& prefix);

  std::unique_ptr<Graph> graph(const Graph& src, Graph& parent, Node* parentNode);

  Rewriter& rw_;
  const AttributeEnv& env_;
  const std::string& prefix_;
  InlineResult& result_;
  InlineResult scratch_;
};

}  // namespace graphrw::ir
