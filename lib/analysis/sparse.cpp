#include "analysis/sparse.h"

#include <algorithm>
#include <cstring>

#include "support/error.h"

namespace graphrw {
namespace {

// The linear position of each stored value, checked against the dense shape.
std::vector<int64_t> linearIndices(const onnx::SparseTensorProto& sp, const std::vector<int64_t>& dims, int64_t count,
                                   int64_t nnz, const std::string& where) {
  const onnx::TensorProto& ip = sp.indices();
  if (ip.data_type() != onnx::TensorProto::INT64) badInput(where + ": indices must be int64");
  if (ip.data_location() == onnx::TensorProto::EXTERNAL)
    badInput(where + ": indices in external data are not supported");
  onnx::TensorProto named = ip;  // read errors then name the tensor
  named.set_name(sp.values().name() + " (indices)");
  std::vector<int64_t> raw = readTensor(ir::Tensor(std::move(named))).asInts();
  const auto rank = static_cast<int64_t>(dims.size());
  const bool coordinates = ip.dims_size() == 2 && ip.dims(0) == nnz && ip.dims(1) == rank;
  if (!coordinates && !(ip.dims_size() == 1 && ip.dims(0) == nnz))
    badInput(where + ": indices must have shape [" + std::to_string(nnz) + "] or [" + std::to_string(nnz) + ", " +
             std::to_string(rank) + "]");
  // (readTensor has checked that the data holds what the dims say.)
  std::vector<int64_t> linear;
  if (!coordinates) {
    linear = raw;
  } else {
    linear.resize(static_cast<size_t>(nnz));
    for (int64_t i = 0; i < nnz; ++i) {
      int64_t at = 0;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t c = raw[static_cast<size_t>(i * rank + d)];
        if (c < 0 || c >= dims[static_cast<size_t>(d)])
          badInput(where + ": index " + std::to_string(i) + " has coordinate " + std::to_string(c) + " in dimension " +
                   std::to_string(d) + " of size " + std::to_string(dims[static_cast<size_t>(d)]));
        at = at * dims[static_cast<size_t>(d)] + c;
      }
      linear[static_cast<size_t>(i)] = at;
    }
  }
  for (size_t i = 0; i < linear.size(); ++i) {
    if (linear[i] < 0 || linear[i] >= count)
      badInput(where + ": index " + std::to_string(linear[i]) + " is outside the " + std::to_string(count) +
               " elements");
    if (i && linear[i] <= linear[i - 1]) badInput(where + ": indices are not in strictly increasing order");
  }
  return linear;
}

}  // namespace

HostTensor densify(const onnx::SparseTensorProto& sp, uint64_t maxBytes) {
  const onnx::TensorProto& vp = sp.values();
  const std::string where = "sparse initializer '" + vp.name() + "'";
  if (vp.data_location() == onnx::TensorProto::EXTERNAL)
    badInput(where + ": values in external data are not supported");
  const size_t es = ir::elementSize(vp.data_type());
  if (es == 0)
    badInput(where + ": values of type " + std::string(ir::dataTypeName(vp.data_type())) + " cannot be made dense");
  if (vp.dims_size() != 1) badInput(where + ": values must be 1-D");
  HostTensor values = readTensor(ir::Tensor(vp));
  const int64_t nnz = vp.dims(0);
  if (nnz < 0) badInput(where + ": values have a negative dimension");
  std::vector<int64_t> dims(sp.dims().begin(), sp.dims().end());
  uint64_t bytes = es;
  int64_t count = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(count, d, &count) ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      badInput(where + ": dims are negative or too large");
  if (bytes > std::min(maxBytes, machineMemory()))
    badInput(where + ": its dense form needs " + std::to_string(bytes) + " bytes, more than the limit of " +
             std::to_string(std::min(maxBytes, machineMemory())));
  std::vector<int64_t> at = nnz ? linearIndices(sp, dims, count, nnz, where) : std::vector<int64_t>{};
  HostTensor dense{vp.data_type(), dims, std::string(bytes, '\0')};
  for (size_t i = 0; i < at.size(); ++i)
    std::memcpy(dense.data.data() + static_cast<size_t>(at[i]) * es, values.data.data() + i * es, es);
  return dense;
}

}  // namespace graphrw
