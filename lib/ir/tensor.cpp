// Tensor: its size, its bytes (a view, pieces, external data), and the checks
// of a TensorProto's data against its shape.
#include <cstring>

#include "ir/ir.h"
#include "support/error.h"
#include "support/external_data.h"

namespace graphrw::ir {

int64_t Tensor::elementCount() const {
  int64_t n = 1;
  for (int64_t d : proto_.dims()) {
    if (d < 0) badInput("tensor '" + name() + "': negative dimension " + std::to_string(d));
    if (__builtin_mul_overflow(n, d, &n))
      badInput("tensor '" + name() + "': its dimensions multiply past 2^63 elements");
  }
  return n;
}

Bytes Tensor::externalBytes() const {
  if (!external_) badInput("tensor '" + name() + "': external data has no folder to be read from");
  return external_->read(parseExternalRef(proto_), name());
}

const std::vector<Bytes>& Tensor::rawPieces() const {
  static const std::vector<Bytes> none;
  return pieces_ ? *pieces_ : none;
}

std::optional<std::string> Tensor::rawCopy() const {
  if (raw_) return raw_->copy();
  if (!pieces_) return std::nullopt;
  std::string all(storedBytes(), '\0');
  size_t at = 0;
  for (const Bytes& b : *pieces_) {
    if (b.size == 0) continue;
    if (b.owner)
      b.owner->copyOut(b.data, b.size, all.data() + at);
    else
      std::memcpy(all.data() + at, b.data, b.size);
    at += b.size;
  }
  return all;
}

uint64_t Tensor::storedBytes() const {
  if (raw_) return raw_->size;
  if (pieces_) {
    uint64_t n = 0;
    for (const Bytes& b : *pieces_) n += b.size;
    return n;
  }
  if (isExternal()) {
    auto ref = parseExternalRef(proto_);
    if (ref.length) return *ref.length;
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(elementCount()), elementSize(dataType()), &bytes))
      badInput("tensor '" + name() + "': its size in bytes is past 2^64");
    return bytes;
  }
  const auto& p = proto_;
  if (p.has_raw_data()) return p.raw_data().size();
  uint64_t n = p.float_data_size() * 4ull + p.int32_data_size() * 4ull + p.int64_data_size() * 8ull +
               p.double_data_size() * 8ull + p.uint64_data_size() * 8ull;
  for (const auto& s : p.string_data()) n += s.size();
  return n;
}

size_t elementSize(int32_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::BOOL:
      return 1;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

std::optional<std::string> tensorDataProblem(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  if (t.data_location() == T::EXTERNAL) return std::nullopt;
  uint64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return "dimension " + std::to_string(d) + " is negative";
    if (d != 0 && count > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(d))
      return "its dims hold more than 2^63 elements";
    count *= static_cast<uint64_t>(d);
  }
  uint64_t held = 0;
  std::string field;
  if (t.has_raw_data()) {
    size_t size = elementSize(t.data_type());
    if (size == 0) return std::nullopt;  // strings have no raw form; ONNX's checker names that
    if (t.raw_data().size() % size != 0)
      return "raw_data holds " + std::to_string(t.raw_data().size()) + " bytes, not a whole number of " +
             dataTypeName(t.data_type()) + " elements";
    held = t.raw_data().size() / size;
    field = "raw_data";
  } else {
    switch (t.data_type()) {
      case T::FLOAT:
        held = static_cast<uint64_t>(t.float_data_size());
        field = "float_data";
        break;
      case T::COMPLEX64:
        held = static_cast<uint64_t>(t.float_data_size()) / 2;
        field = "float_data";
        break;
      case T::DOUBLE:
        held = static_cast<uint64_t>(t.double_data_size());
        field = "double_data";
        break;
      case T::COMPLEX128:
        held = static_cast<uint64_t>(t.double_data_size()) / 2;
        field = "double_data";
        break;
      case T::INT64:
        held = static_cast<uint64_t>(t.int64_data_size());
        field = "int64_data";
        break;
      case T::UINT32:
      case T::UINT64:
        held = static_cast<uint64_t>(t.uint64_data_size());
        field = "uint64_data";
        break;
      case T::STRING:
        held = static_cast<uint64_t>(t.string_data_size());
        field = "string_data";
        break;
      case T::INT32:
      case T::INT16:
      case T::INT8:
      case T::UINT16:
      case T::UINT8:
      case T::BOOL:
      case T::FLOAT16:
      case T::BFLOAT16:
        held = static_cast<uint64_t>(t.int32_data_size());
        field = "int32_data";
        break;
      default:
        return std::nullopt;
    }
  }
  if (held == count) return std::nullopt;
  return field + " holds " + std::to_string(held) + " element" + (held == 1 ? "" : "s") + ", its dims [" +
         [&] {
           std::string d;
           for (int64_t x : t.dims()) d += (d.empty() ? "" : ",") + std::to_string(x);
           return d;
         }() +
         "] say " + std::to_string(count);
}

}  // namespace graphrw::ir
