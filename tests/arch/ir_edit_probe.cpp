// Compiled by the "IR is sealed" tests with the include paths and flags a pass
// gets (tests/CMakeLists.txt). PROBE 0 edits through the Rewriter and must
// compile; every other probe edits the IR directly and must fail to compile,
// with the error tests/CMakeLists.txt names for it (so a probe cannot pass
// because of a typo or a broken set-up).
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
#endif
  (void)rw;
}
