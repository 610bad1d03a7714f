// Shares attribute protos between nodes: see ir::Attribute.
#pragma once

#include <memory>
#include <string>

#include "ir/ir.h"

namespace graphrw::ir {

// Hands out one shared proto per distinct attribute value (keyed by its
// serialized bytes), so equal attributes of many nodes cost one proto. Holds
// at most kMaxEntries distinct values; past that, new values are not shared.
class AttributeInterner {
 public:
  static constexpr size_t kMaxEntries = 1 << 16;
  // `proto` must have no t, tensors, g or graphs (an Attribute's proto part).
  void assign(Attribute& a, onnx::AttributeProto&& proto);

 private:
  FlatStringMap<std::string, SharedAttributeProto> shared_;
  std::string key_;  // reused serialization buffer
};

}  // namespace graphrw::ir
