// Sparse initializers made dense: ONNX's SparseTensorProto (values [NNZ] and
// indices, linear [NNZ] or coordinates [NNZ, rank]) turned into the dense
// tensor it stands for, for consumers that read graph.initializer only (PopART).
#pragma once

#include <cstdint>

#include "analysis/host_tensor.h"

namespace graphrw {

// The dense tensor `sparse` describes: zeros but at its indices. Indices must
// be int64, in range and strictly increasing (as ONNX's checker requires); the
// result must fit in `maxBytes` (and in machineMemory()). Throws Error(BadInput) naming the tensor otherwise.
HostTensor densify(const onnx::SparseTensorProto& sparse, uint64_t maxBytes);

}  // namespace graphrw
