// Rewriter::initializerToConstant (ir/rewriter.h).
#include "ir/attribute_interner.h"
#include "ir/rewriter.h"
#include "support/error.h"

namespace graphrw::ir {

Node* Rewriter::initializerToConstant(Value* v) {
  Graph& g = *v->graph();
  if (!v->isInitializer() || v->isGraphInput())
    fail(ExitCode::Internal, "initializerToConstant: '" + v->name() + "' is not an initializer of its graph alone");
  onnx::TypeProto type;
  auto* tensorType = type.mutable_tensor_type();
  tensorType->set_elem_type(v->initializer()->dataType());
  for (int64_t d : v->initializer()->dims()) tensorType->mutable_shape()->add_dim()->set_dim_value(d);
  if (!v->type()) setType(v, type);  // known from the initializer until now: an annotation, not written
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
