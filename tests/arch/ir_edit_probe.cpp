// Compiled by the "IR is sealed" tests with the include paths and flags a pass
// gets (tests/CMakeLists.txt). PROBE 0 edits through the Rewriter and must
// compile; every other probe edits the IR directly and must fail to compile,
// with the error tests/CMakeLists.txt names for it (so a probe cannot pass
// because of a typo or a broken set-up).
#if PROBE == 24
// A friend's name defined before the IR's headers are read: they define it again.
namespace graphrw::ir {
class Rewriter {};
}  // namespace graphrw::ir
#endif

#include <bit>
#include <cstdint>
#include <memory>
#include <string>

#include "ir/access.h"
#include "ir/ir.h"
#include "ir/rewriter.h"
#include "pass/pass.h"

#if PROBE == 14
// A pass defining the test-only friend's name gets no access: the friend
// declaration exists only in test targets.
namespace graphrw::ir::testing {
struct Corruptor {
  static void retype(Value& v) { v.setType(onnx::TypeProto()); }
};
}  // namespace graphrw::ir::testing
#endif

#if PROBE == 23
// A pass defining a friend's name (the inliner's copier) to reach Node::attrs_.
namespace graphrw::ir {
class InlineCopier {
 public:
  static void clear(Node& n) { n.attrs_.clear(); }
};
}  // namespace graphrw::ir
#elif PROBE == 25
// A pass specialising the node list's template for its own type: only OwningList<Node> is a friend.
struct Mine;
template <>
class graphrw::OwningList<Mine> {
 public:
  static void cut(graphrw::ir::Node& n) { n.next_.reset(); }
};
#endif

using namespace graphrw::ir;

void probe(Model& model, Rewriter& rw) {
  Graph& g = model.graph();
  Node* n = g.nodes().front().get();
  Value* v = n->output(0);
  (void)v;
#if PROBE == 0
  rw.setType(v, onnx::TypeProto());
  rw.setOpsetImport(g, "x", 1);
  rw.removeAttribute(n, "a");
  (void)rw.reserveNodeName(g, "prefix");
  (void)n->attributes().size();
  (void)g.initializers().front().tensor->proto().dims_size();
  (void)g.names().contains("x");
  (void)model.valueNames().size();
#elif PROBE == 1
  g.addValue("x");
#elif PROBE == 2
  n->attributes().clear();
#elif PROBE == 3
  model.setOpsetImport("x", 1);
#elif PROBE == 4
  v->setType(onnx::TypeProto());
#elif PROBE == 5
  IrAccess::inputs(*n).clear();
#elif PROBE == 6
  model.mutableResidual().set_ir_version(3);
#elif PROBE == 7
  g.setOutputValue(0, v);
#elif PROBE == 8
  model.removeFunction(model.functions().front().get());
#elif PROBE == 9
  g.initializers().front().tensor->mutableProto().clear_raw_data();
#elif PROBE == 10
  n->attributes().front().t()->mutableProto().clear_dims();
#elif PROBE == 11
  g.initializers().front().tensor->clearRawView();
#elif PROBE == 12
  (void)g.names().fresh("x");
#elif PROBE == 13
  model.valueNames().erase("x");
#elif PROBE == 14
  testing::Corruptor::retype(*v);
#elif PROBE == 15
  g.initializers().front().tensor->setRawView(graphrw::Bytes{});
#elif PROBE == 16
  (void)g.nodeNames().fresh("x");
#elif PROBE == 17
  const_cast<onnx::AttributeProto&>(n->attributes().front().proto()).set_i(3);  // an attribute's proto
#elif PROBE == 18
  const_cast<onnx::TensorProto&>(g.initializers().front().tensor->proto()).clear_dims();  // a tensor's dims
#elif PROBE == 19
  const_cast<char*>(g.initializers().front().tensor->rawView()->data)[0] = 1;  // a payload's bytes
#elif PROBE == 20
  const_cast<onnx::NodeProto&>(n->residual()).set_doc_string("x");  // Node::residual()
#elif PROBE == 21
  ((onnx::AttributeProto&)n->attributes().front().proto()).set_i(3);  // a C-style cast
#elif PROBE == 22
  reinterpret_cast<onnx::NodeProto*>(reinterpret_cast<std::uintptr_t>(&n->residual()))->set_doc_string("x");
#elif PROBE == 26
  std::bit_cast<onnx::NodeProto*>(&n->residual())->set_doc_string("x");
#endif
  (void)rw;
}
