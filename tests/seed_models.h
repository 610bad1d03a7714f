// The seed's test models (docs/seed-cases.md), as ONNX: M1-M5. Batch 32.
// Dense layers are MatMul + Add (+ activation), named <layer>/MatMul, ...
#pragma once

#include <onnx/onnx_pb.h>

namespace graphrw::test {

onnx::ModelProto seedM1();  // dense 32 relu, dense 6 softmax
onnx::ModelProto seedM2();  // dense 32 relu, dropout 0.5, layer norm
onnx::ModelProto seedM3();  // Conv1D-like: Transpose, Conv(32, k3), Transpose
onnx::ModelProto seedM4();  // call `custom_layer` of local function CustomLayer (dense/dropout/norm x3)
onnx::ModelProto seedM5();  // calls custom_1, custom_2 of SimpleCustomLayer, add, heads out_1, out_2

// Adds a float initializer with deterministic pseudo-random values (raw_data).
void addWeight(onnx::ModelProto& model, const std::string& name, std::vector<int64_t> dims, uint32_t seed,
               float scale = 0.3f);
// Total element count of all initializers and Constant tensors.
int64_t weightElements(const onnx::ModelProto& model);

}  // namespace graphrw::test
