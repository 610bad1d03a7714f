// What graphrw knows about PopART's `__` node attributes (schemas/popart-attributes.json).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace graphrw::popart {

// The type PopART reads a `__` attribute as, if graphrw knows the attribute.
std::optional<onnx::AttributeProto_AttributeType> expectedType(const std::string& name);
// Problems with one attribute (wrong type, value out of range), empty when fine.
std::vector<std::string> checkAttribute(const onnx::AttributeProto& attribute);

}  // namespace graphrw::popart
