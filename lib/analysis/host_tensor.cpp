// HostTensor (analysis/host_tensor.h): read from the IR's tensors and Constants, written as a
// TensorProto; its element count, its integers, its scalar.
#include "analysis/host_tensor.h"

#include <unistd.h>

#include <cstring>

#include "analysis/types.h"
#include "ir/ir.h"
#include "support/error.h"

namespace graphrw {

using namespace ir;
using TP = onnx::TensorProto;

uint64_t machineMemory() {
  static const uint64_t bytes = [] {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size) : UINT64_MAX;
  }();
  return bytes;
}

HostTensor readTensor(const Tensor& tensor) {
  HostTensor t;
  const auto& p = tensor.proto();
  t.type = p.data_type();
  t.dims = tensor.dims();
  size_t size = elementSize(t.type);
  if (size == 0) badInput("tensor '" + p.name() + "': type " + dataTypeName(t.type) + " cannot be folded");
  if (auto raw = tensor.rawCopy()) {
    t.data = std::move(*raw);
  } else if (tensor.isExternal()) {
    t.data = tensor.externalBytes().copy();
  } else if (p.has_raw_data()) {
    t.data = p.raw_data();
  } else {
    auto put = [&](const auto& field, auto as) {
      t.data.resize(static_cast<size_t>(field.size()) * sizeof(as));
      for (int i = 0; i < field.size(); ++i) {
        auto v = static_cast<decltype(as)>(field.Get(i));
        std::memcpy(t.data.data() + static_cast<size_t>(i) * sizeof(as), &v, sizeof(as));
      }
    };
    switch (t.type) {
      case TP::FLOAT:
        put(p.float_data(), float{});
        break;
      case TP::DOUBLE:
        put(p.double_data(), double{});
        break;
      case TP::INT64:
        put(p.int64_data(), int64_t{});
        break;
      case TP::UINT64:
        put(p.uint64_data(), uint64_t{});
        break;
      case TP::UINT32:
        put(p.uint64_data(), uint32_t{});
        break;
      case TP::INT32:
        put(p.int32_data(), int32_t{});
        break;
      case TP::INT16:
        put(p.int32_data(), int16_t{});
        break;
      case TP::UINT16:
      case TP::FLOAT16:
      case TP::BFLOAT16:
        put(p.int32_data(), uint16_t{});
        break;
      case TP::INT8:
        put(p.int32_data(), int8_t{});
        break;
      case TP::UINT8:
      case TP::BOOL:
        put(p.int32_data(), uint8_t{});
        break;
      default:
        badInput("tensor '" + p.name() + "': type " + dataTypeName(t.type) + " cannot be folded");
    }
  }
  uint64_t needed = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(t.count()), size, &needed) || t.data.size() != needed)
    badInput("tensor '" + p.name() + "' holds " + std::to_string(t.data.size()) + " bytes, its shape needs " +
             std::to_string(static_cast<size_t>(t.count()) * size));
  return t;
}

TP toTensorProto(const HostTensor& t, const std::string& name) {
  TP p;
  p.set_name(name);
  p.set_data_type(t.type);
  for (int64_t d : t.dims) p.add_dims(d);
  p.set_raw_data(t.data);
  return p;
}

std::optional<HostTensor> constantOf(const Value* v) {
  if (!v) return std::nullopt;
  try {
    if (v->isInitializer() && !v->isGraphInput()) return readTensor(*v->initializer());
    const Node* p = v->producer();
    if (p && isDefaultDomain(p->domain()) && p->opType() == "Constant")
      if (const Attribute* a = p->attribute("value"); a && a->t()) return readTensor(*a->t());
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string contentKey(const HostTensor& t) {
  return std::to_string(t.type) + ":" + std::to_string(t.dims.size()) + ":" + t.data;
}

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
    case TP::BOOL:
      return data[0] ? 1.0 : 0.0;
    default:
      return std::nullopt;
  }
}

std::vector<int64_t> HostTensor::asInts() const {
  std::vector<int64_t> out(static_cast<size_t>(count()));
  if (out.empty()) {
    if (type != TP::INT64 && type != TP::INT32)
      badInput(std::string("expected an integer tensor, got ") + dataTypeName(type));
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
