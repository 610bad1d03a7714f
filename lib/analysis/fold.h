// Constant folding of weight layout changes: the ops a replacement template
// applies to initializers (Transpose, Reshape, Concat, Split, Slice, Squeeze,
// Unsqueeze, Cast, Identity, and Add/Sub/Mul/Div/Neg with numpy broadcasting)
// evaluated on the host, so the written model carries the transformed weights.
#pragma once

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

// Whether graphrw can fold this op at all (its type and attributes are checked by evaluate).
bool isFoldable(const ir::Node& node);
// Evaluates `node` on constant inputs (nullptr: missing optional input).
// Returns nothing, with `why` set, when an input type or attribute is not
// supported, or when a result would hold more than `maxBytes`.
std::optional<std::vector<HostTensor>> evaluate(const ir::Node& node, const std::vector<const HostTensor*>& inputs,
                                                std::string& why, uint64_t maxBytes = UINT64_MAX);

}  // namespace graphrw
