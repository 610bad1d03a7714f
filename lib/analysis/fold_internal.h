// Helpers shared by the constant-folding evaluator's files (internal to lib/analysis).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "analysis/fold.h"
#include "support/error.h"

namespace graphrw::fold_detail {

using TP = onnx::TensorProto;

inline std::vector<int64_t> ints(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.attribute(name);
  if (!a) return {};
  return {a->proto.ints().begin(), a->proto.ints().end()};
}
inline std::optional<int64_t> intAttr(const ir::Node& n, const char* name) {
  const ir::Attribute* a = n.attribute(name);
  if (!a) return std::nullopt;
  return a->proto.i();
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
    case TP::FLOAT: return f(float{});
    case TP::DOUBLE: return f(double{});
    case TP::INT32: return f(int32_t{});
    default: return f(int64_t{});
  }
}


// Evaluates the ops of shape computations (fold_ops.cpp); nothing when `n` is not one of them.
std::optional<std::vector<HostTensor>> evaluateShapeOp(const ir::Node& n, const std::vector<const HostTensor*>& in,
                                                       std::string& why, uint64_t maxBytes);
bool isShapeOp(const std::string& op);

}  // namespace graphrw::fold_detail
