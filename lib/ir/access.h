// Construction-level access to the IR's private members (ir.h) for the
// builder, the rewriter and the inliner only: IrAccess's members are private,
// with those as friends; passes edit through ir::Rewriter.
#pragma once

#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace graphrw::ir {

class IrAccess {
  friend class Graph;
  friend class Builder;
  friend class Rewriter;
  friend class InlineCopier;
  GRAPHRW_IR_TEST_FRIEND;
  // A name's text in g's model (ir/name.h): what setName and setIdentity take.
  static Name makeName(const Graph& g, std::string_view text) { return g.model()->nameText_.make(text); }
  static void setIdentity(Node& n, Name name, std::string_view opType, std::string_view domain,
                          std::string_view overload) {
    n.name_ = name;
    n.op_ = &internOp(opType, domain, overload);
  }
  static void setName(Node& n, Name name) { n.name_ = name; }
  static uint32_t createdBy(const Node& n) { return n.createdBy_; }
  static void setCreatedBy(Node& n, uint32_t stamp) { n.createdBy_ = stamp & 0xffffff; }
  static void setOp(Node& n, std::string opType, std::string domain) {
    n.op_ = &internOp(opType, domain, *n.op_->overload);
  }
  static ValueList& inputs(Node& n) { return n.inputs_; }
  static ValueList& outputs(Node& n) { return n.outputs_; }
  static void setProducer(Value& v, Node* n, int index) {
    v.producer_ = n;
    v.producerIndex_ = index;
  }
  static void setName(Value& v, Name name) { v.name_ = name; }
  static void place(Value& v, Graph* g, size_t slot) {
    v.graph_ = g;
    if (slot > UINT32_MAX) throw std::length_error("more than 2^32 values in one graph");
    v.slot_ = static_cast<uint32_t>(slot);
  }
  static void unindexValue(Graph& g, std::string_view name) { g.indexErase(name); }
  static void indexValue(Graph& g, Value* v) { g.indexInsert(v); }
  static std::vector<ValueInfo>& inputs(Graph& g) { return g.inputs_; }
  static std::vector<ValueInfo>& outputs(Graph& g) { return g.outputs_; }
  static Graph::NodeList& nodes(Graph& g) { return g.nodes_; }
  static std::unique_ptr<Node> newNode() { return std::unique_ptr<Node>(new Node()); }
  static FunctionKey& key(Function& f) { return f.key_; }
  static Node::AttributeList& attributes(Node& n) { return n.attrs_; }
  static AttributeInterner& attributeInterner(Model& m) { return *m.attributes_; }
};

}  // namespace graphrw::ir
