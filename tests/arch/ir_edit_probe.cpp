// Compiled by the "IR mutators are private" tests with the include paths and
// flags a pass gets (tests/CMakeLists.txt). PROBE 0 edits through the Rewriter
// and must compile; every other probe edits the IR directly and must not.
#include <memory>

#include "ir.h"
#include "pass.h"
#include "rewriter.h"

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
  (void)n->attributes().size();
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
#endif
  (void)rw;
}
