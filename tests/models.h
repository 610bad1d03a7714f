// Small models in ONNX's textual syntax, shared by tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace graphrw::test {

// MatMul with a 4x4 weight, then a call of the local function `local.Layer`.
inline const char* kSmallModel = R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1], producer_name: "graphrw-test">
main (float[2,4] X) => (float[2,4] Y) <float[4,4] W = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}> {
  H = MatMul(X, W)
  Y = local.Layer <alpha = 0.5> (H)
}
<domain: "local", opset_import: ["" : 17]>
Layer <alpha> (x) => (y) {
  y = LeakyRelu <alpha: float = @alpha> (x)
}
)";

// Y = Neg(X): one node, unnamed, to edit.
inline const char* kNegModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2] X) => (float[2] Y) {
  Y = Neg (X)
}
)";

// Moves every initializer's float_data into raw_data (as exporters write it).
inline void toRawData(onnx::ModelProto& model) {
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.float_data_size() == 0) continue;
    std::string raw(reinterpret_cast<const char*>(t.float_data().data()), t.float_data_size() * sizeof(float));
    t.clear_float_data();
    t.set_raw_data(raw);
  }
}

}  // namespace graphrw::test
