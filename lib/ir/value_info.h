// A graph's input, output and value_info entries (ir.h's Graph holds them).
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>

#include "ir/tensor.h"  // GRAPHRW_IR_EDITORS

namespace graphrw::ir {

class Value;
class Graph;

// A graph input, output or value_info entry: the value, the entry's type and
// its other fields; its name follows the value. The type is the model's one
// copy (Model::internType), not a TypeProto of its own: set-shapes declares a
// type for every value, and a million entries each holding five protobuf
// messages took 280 MB. The rest (doc_string, unknown fields) is kept only
// when there is any.
class ValueInfo {
 public:
  ValueInfo(Value* v, const onnx::TypeProto* type, std::unique_ptr<onnx::ValueInfoProto> rest)
      : value(v), type_(type), rest_(std::move(rest)) {}
  ValueInfo(const ValueInfo& o)
      : value(o.value), type_(o.type_), rest_(o.rest_ ? std::make_unique<onnx::ValueInfoProto>(*o.rest_) : nullptr) {}
  ValueInfo& operator=(const ValueInfo& o) {
    if (this != &o) *this = ValueInfo(o);
    return *this;
  }
  ValueInfo(ValueInfo&&) noexcept = default;
  ValueInfo& operator=(ValueInfo&&) noexcept = default;

  Value* value;
  // The declared type, interned in the model of `value`; nullptr when the entry has none.
  const onnx::TypeProto* type() const { return type_; }
  // The declared type, or an empty TypeProto (what ValueInfoProto::type() gives).
  const onnx::TypeProto& typeOrEmpty() const { return type_ ? *type_ : onnx::TypeProto::default_instance(); }
  // Every field but the name and the type; nullptr when there are none.
  const onnx::ValueInfoProto* rest() const { return rest_.get(); }
  // The entry as ONNX spells it, named after the value.
  onnx::ValueInfoProto proto() const;

 private:
  GRAPHRW_IR_EDITORS;
  friend class Graph;
  const onnx::TypeProto* type_;
  std::unique_ptr<onnx::ValueInfoProto> rest_;
};

}  // namespace graphrw::ir
