// Rewriter::initializerToConstant (ir/rewriter.h).
#include "ir/attribute_interner.h"
#include "ir/rewriter.h"
#include "support/error.h"

namespace graphrw::ir {

Node* Rewriter::initializerToConstant(Value* v) {
  Graph& g = *v->graph();
  if (!v->isInitializer() || v->isGraphInput())
    fail(ExitCode::Internal, "initializerToConstant: '" + v->name() + "' is not an initializer of its graph alone");
  // v keeps its known type: Graph::addInitializer gave it the tensor's when it had none.
  std::unique_ptr<Tensor> tensor = std::move(g.initializers_[v->initializerIndex_].tensor);
  g.removeInitializer(v);
  counts_.initializersRemoved++;
  const Node* first = g.nodes().empty() ? nullptr : g.nodes().front().get();
  Node* c = createNode(g, first, {v->name().str(), "Constant", "", {}, {""}});
  adoptOutput(c, 0, v);
  onnx::AttributeProto proto;
  proto.set_name("value");
  proto.set_type(onnx::AttributeProto::TENSOR);
  Attribute value;
  IrAccess::attributeInterner(model_).assign(value, std::move(proto));
  value.objects().t = std::move(tensor);
  c->attrs_.push_back(std::move(value));
  return c;
}

}  // namespace graphrw::ir
