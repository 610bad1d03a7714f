// HostTensor's accessors (analysis/fold.h): its element count, its integers, its scalar.
#include <cstring>

#include "analysis/fold.h"
#include "analysis/fold_internal.h"
#include "support/error.h"

namespace graphrw {

using namespace ir;
using TP = onnx::TensorProto;
using namespace fold_detail;

int64_t HostTensor::count() const {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) badInput("a tensor's dimensions are negative or multiply past 2^63");
  return n;
}

std::optional<double> HostTensor::scalar() const {
  if (count() != 1) return std::nullopt;
  switch (type) {
    case TP::FLOAT: {
      float f;
      std::memcpy(&f, data.data(), 4);
      return f;
    }
    case TP::DOUBLE: {
      double d;
      std::memcpy(&d, data.data(), 8);
      return d;
    }
    case TP::BOOL: return data[0] ? 1.0 : 0.0;
    default: return std::nullopt;
  }
}

std::vector<int64_t> HostTensor::asInts() const {
  std::vector<int64_t> out(static_cast<size_t>(count()));
  if (out.empty()) {
    if (type != TP::INT64 && type != TP::INT32) badInput(std::string("expected an integer tensor, got ") + dataTypeName(type));
  } else if (type == TP::INT64) {
    std::memcpy(out.data(), data.data(), out.size() * 8);  // not with an empty vector: data() may be null
  } else if (type == TP::INT32) {
    for (size_t i = 0; i < out.size(); ++i) {
      int32_t v;
      std::memcpy(&v, data.data() + i * 4, 4);
      out[i] = v;
    }
  } else {
    badInput(std::string("expected an integer tensor, got ") + dataTypeName(type));
  }
  return out;
}

}  // namespace graphrw
