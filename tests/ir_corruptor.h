// Test-only access to the IR's private mutators (a friend of the IR classes,
// see GRAPHRW_IR_EDITORS in ir.h): builds broken IR on purpose, for the
// verifier's and writer's failure paths. Passes cannot use it.
#pragma once

#include <list>
#include <memory>
#include <vector>

#include "ir.h"

namespace graphrw::ir::testing {

struct Corruptor {
  static std::vector<Value*>& inputs(Node& n) { return IrAccess::inputs(n); }
  static std::list<std::unique_ptr<Node>>& nodes(Graph& g) { return IrAccess::nodes(g); }
  static void setProducer(Value& v, Node* n, int index) { IrAccess::setProducer(v, n, index); }
  static void addUse(Value* v, Node* n, int index) { Graph::addUse(v, n, index); }
  static void removeUse(Value* v, Node* n, int index) { Graph::removeUse(v, n, index); }
  static Tensor* initializer(Value& v) { return v.initializer_; }
};

}  // namespace graphrw::ir::testing
