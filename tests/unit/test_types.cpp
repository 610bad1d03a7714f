#include <catch2/catch.hpp>

#include "analysis/types.h"
#include "io/loader.h"
#include "ir/rewriter.h"
#include "models.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::ir;

TEST_CASE("inferring the types of a few values keeps only theirs", "[types]") {
  // A chain whose middle values are typed on the way to B and Y and then
  // forgotten: a pass asking for a few types on a million-node graph does
  // not leave a TypeProto on every value.
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2, 3] X) => (Y) {
  A = Relu(X)
  B = Neg(A)
  C = Transpose(B)
  Y = Abs(C)
}
)"));
  Graph& g = model->graph();
  Rewriter rw(*model);
  Value* b = g.findLocal("B");
  Value* y = g.findLocal("Y");
  inferMissingTypes(rw, {b, y});
  REQUIRE(b->type());
  REQUIRE(y->type());
  CHECK(y->type()->tensor_type().shape().dim(0).dim_value() == 3);  // through the transpose: C was typed on the way
  CHECK(y->type()->tensor_type().shape().dim(1).dim_value() == 2);
  CHECK_FALSE(g.findLocal("A")->type());
  CHECK_FALSE(g.findLocal("C")->type());
  // Every type, when asked for every value, as before.
  inferMissingTypes(rw);
  CHECK(g.findLocal("A")->type());
  CHECK(g.findLocal("C")->type());
}

TEST_CASE("every type: node by node where inputs are typed, whole-model inference past a local function's call",
          "[types]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
main (float[2, 3] X) => (Y) {
  A = Relu(X)
  B = local.Twice(A)
  C = Transpose(B)
  Y = Abs(C)
}
<domain: "local", opset_import: ["" : 17]>
Twice (x) => (y) {
  y = Add(x, x)
}
)"));
  Graph& g = model->graph();
  Rewriter rw(*model);
  inferMissingTypes(rw);
  for (const char* name : {"A", "B", "C", "Y"}) {
    INFO(name);
    REQUIRE(g.findLocal(name)->type());
  }
  const auto& c = g.findLocal("C")->type()->tensor_type();
  CHECK(c.elem_type() == onnx::TensorProto::FLOAT);
  REQUIRE(c.shape().dim_size() == 2);  // the call's output typed by ONNX, then the transpose read it
  CHECK(c.shape().dim(0).dim_value() == 3);
  CHECK(c.shape().dim(1).dim_value() == 2);
}
