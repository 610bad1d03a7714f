// Tensors on the host: a graph constant's bytes as one type, rank and
// little-endian row-major data, read from any of ONNX's storage forms.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace graphrw {

struct HostTensor {
  int32_t type = 0;
  std::vector<int64_t> dims;
  std::string data;  // little-endian elements, row-major
  int64_t count() const;
  std::vector<int64_t> asInts() const;  // INT32 / INT64 tensors
  // A one-element FLOAT, DOUBLE or BOOL tensor's value (Dropout's ratio and
  // training_mode); nothing for any other tensor.
  std::optional<double> scalar() const;
};

// The tensor's data as stored (raw, external or typed fields). Throws Error(BadInput).
HostTensor readTensor(const ir::Tensor& tensor);
// A one-tensor result, moved in (a braced list would copy the bytes twice).
std::vector<HostTensor> oneResult(HostTensor t);
// A TensorProto holding `t` (raw_data) under `name`.
onnx::TensorProto toTensorProto(const HostTensor& t, const std::string& name);

// The value of a graph constant: an initializer that is not a graph input, or
// an ai.onnx Constant's `value`. Nothing when `v` is not one (or cannot be read).
std::optional<HostTensor> constantOf(const ir::Value* v);
// A text equal for two tensors exactly when their type, rank and bytes are.
std::string contentKey(const HostTensor& t);

// The machine's physical memory in bytes: no tensor larger than it is made,
// whatever a size option allows (the allocation would fail, or abort under ASan).
uint64_t machineMemory();

}  // namespace graphrw
