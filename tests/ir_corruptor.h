// Test-only access to the IR's private mutators: builds broken IR on purpose,
// for the verifier's, writer's and pass manager's failure paths. It is a
// friend of the IR classes only where GRAPHRW_IR_TESTING is defined, which
// CMake does for test targets alone (see GRAPHRW_IR_EDITORS in ir/ir.h): a
// pass that defines a class of this name gets no access.
#pragma once

#include <list>
#include <memory>
#include <utility>
#include <vector>

#include "ir/access.h"
#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw::ir::testing {

struct Corruptor {
  static ValueList& inputs(Node& n) { return IrAccess::inputs(n); }
  static Graph::NodeList& nodes(Graph& g) { return IrAccess::nodes(g); }
  static void setProducer(Value& v, Node* n, int index) { IrAccess::setProducer(v, n, index); }
  static void setName(Value& v, Name name) { IrAccess::setName(v, name); }
  static void setName(Node& n, Name name) { IrAccess::setName(n, name); }
  static Name makeName(const Graph& g, std::string_view text) { return IrAccess::makeName(g, text); }
  static void addUse(Value* v, Node* n, int index) { Graph::addUse(v, n, index); }
  static void removeUse(Value* v, Node* n, int index) { Graph::removeUse(v, n, index); }
  static Tensor* initializer(Value& v) { return const_cast<Tensor*>(v.initializer()); }
  static onnx::TensorProto& proto(Tensor& t) { return t.mutableProto(); }
  static void setRawView(Tensor& t, Bytes bytes) { t.setRawView(std::move(bytes)); }
  static void clearRawView(Tensor& t) { t.clearRawView(); }
  static Node::AttributeList& attributes(Node& n) { return IrAccess::attributes(n); }
  static NameTable& nodeNames(Graph& g) { return g.mutableNodeNames(); }
  // As if 2^24 - 1 Rewriters had run before: this one keeps a set of its nodes.
  static void dropStamp(Rewriter& rw) { rw.stamp_ = 0; }
};

}  // namespace graphrw::ir::testing
