// Helpers shared by the constant-folding evaluator's files (internal to lib/analysis).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "analysis/attributes.h"
#include "fold/fold.h"
#include "support/error.h"

namespace graphrw::fold_detail {

using TP = onnx::TensorProto;

inline std::vector<int64_t> ints(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.attribute(name);
  if (!a) return {};
  return {a->proto().ints().begin(), a->proto().ints().end()};
}

inline std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

inline int64_t normAxis(int64_t axis, size_t rank, const char* what) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) badInput(std::string(what) + ": axis " + std::to_string(axis) + " out of range");
  return axis < 0 ? axis + r : axis;
}

template <typename T>
T load(const std::string& data, size_t i) {
  T v;
  std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void store(std::string& data, size_t i, T v) {
  std::memcpy(data.data() + i * sizeof(T), &v, sizeof(T));
}

inline bool arithmetic(int32_t type) {
  return type == TP::FLOAT || type == TP::DOUBLE || type == TP::INT32 || type == TP::INT64;
}

template <typename F>
auto dispatch(int32_t type, F&& f) {
  switch (type) {
    case TP::FLOAT:
      return f(float{});
    case TP::DOUBLE:
      return f(double{});
    case TP::INT32:
      return f(int32_t{});
    default:
      return f(int64_t{});
  }
}

// Numpy broadcasting of `shapes`; calls f(outIndex, inputIndices).
template <typename F>
std::vector<int64_t> broadcast(const std::vector<std::vector<int64_t>>& shapes, const char* op, F&& f) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<std::vector<int64_t>> padded;
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    std::vector<int64_t> p(rank, 1);
    std::copy(s.begin(), s.end(), p.begin() + static_cast<long>(rank - s.size()));
    for (size_t d = 0; d < rank; ++d) {
      if (p[d] != out[d] && p[d] != 1 && out[d] != 1) {
        std::string message = op;  // not std::string(op) + "...": GCC 12 -O2 warns falsely (-Warray-bounds)
        message += ": shapes do not broadcast";
        badInput(message);
      }
      if (p[d] != 1) out[d] = p[d];
    }
    padded.push_back(std::move(p));
  }
  int64_t total = 1;
  for (int64_t d : out)
    if (__builtin_mul_overflow(total, d, &total)) badInput(std::string(op) + ": the result is too large");
  std::vector<std::vector<int64_t>> strides;
  for (const auto& p : padded) strides.push_back(stridesOf(p));
  std::vector<int64_t> idx(rank, 0);
  std::vector<size_t> at(shapes.size());
  for (int64_t o = 0; o < total; ++o) {
    for (size_t k = 0; k < shapes.size(); ++k) {
      int64_t src = 0;
      for (size_t d = 0; d < rank; ++d)
        if (padded[k][d] != 1) src += idx[d] * strides[k][d];
      at[k] = static_cast<size_t>(src);
    }
    f(static_cast<size_t>(o), at);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Evaluates the ops of shape computations (fold_ops.cpp); nothing when `n` is not one of them.
std::optional<std::vector<HostTensor>> evaluateShapeOp(const ir::Node& n, const std::vector<const HostTensor*>& in,
                                                       std::string& why, uint64_t maxBytes);
bool isShapeOp(const std::string& op);

// Evaluates arithmetic, reductions and indexing ops (fold_math.cpp); nothing (why set) when not supported.
std::optional<std::vector<HostTensor>> evaluateMathOp(const ir::Node& n, const std::vector<const HostTensor*>& in,
                                                      std::string& why, uint64_t maxBytes);
bool isMathOp(const std::string& op);
// Einsum on constants (fold_einsum.cpp); nothing (why set) when the equation or types are not supported.
std::optional<std::vector<HostTensor>> evaluateEinsum(const ir::Node& n, const std::vector<const HostTensor*>& in,
                                                      std::string& why, uint64_t maxBytes);

}  // namespace graphrw::fold_detail
