#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "io/loader.h"
#include "ir/ir.h"
#include "ir/rewriter.h"
#include "support.h"

using namespace graphrw;

namespace {
std::vector<std::string> initializerNames(const ir::Graph& g) {
  std::vector<std::string> names;
  for (const auto& init : g.initializers()) names.push_back(init.value->name());
  return names;
}
}  // namespace

// A value finds its initializer by its index in the graph's list: removing one
// moves the later ones down, and each must still find its own tensor.
TEST_CASE("values find their initializers after others are removed and added", "[value_layout]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) <float[2] A = {1, 1}, float[2] B = {2, 2}, float[2] C = {3, 3}, float[2] D = {4, 4}, float[2] U = {5, 5}> {
  S = Sum (X, A, B, D)
  Y = Add (S, C)
}
)"));
  auto& g = model->graph();
  ir::Rewriter rw(*model);
  REQUIRE(initializerNames(g) == std::vector<std::string>{"A", "B", "C", "D", "U"});
  ir::Value* unused = g.findLocal("U");
  rw.eraseInitializer(unused);  // the last one
  ir::Node* sum = g.findLocal("S")->producer();
  ir::Value* b = g.findLocal("B");
  rw.setInput(sum, 2, g.findLocal("X"));
  rw.eraseInitializer(b);  // one in the middle: C and D move down
  CHECK(initializerNames(g) == std::vector<std::string>{"A", "C", "D"});
  for (const char* name : {"A", "C", "D"}) {
    const ir::Value* v = g.findLocal(name);
    REQUIRE(v->isInitializer());
    CHECK(v->initializer()->name() == name);
  }
  CHECK_FALSE(g.findLocal("X")->isInitializer());
  onnx::TensorProto t;
  t.set_name("E");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1);
  t.add_float_data(6);
  ir::Value* e = rw.addInitializer(g, "E", std::make_unique<ir::Tensor>(t));
  CHECK(e->initializer()->name() == "E");
  CHECK(initializerNames(g) == std::vector<std::string>{"A", "C", "D", "E"});
}

TEST_CASE("a value is 96 bytes", "[value_layout]") {
  // A million-value graph: each 8 bytes is 8 MB.
  STATIC_REQUIRE(sizeof(ir::Value) == 96);
}
