// What graphrw knows about PopART's `__` node attributes (schemas/popart-attributes.json).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace graphrw::ir {
class Node;
}

namespace graphrw::popart {

// RecomputeType (willow/include/popart/op.hpp).
constexpr const char* kRecomputeAttribute = "__recompute_output_in_backward_pass";
constexpr int64_t kCheckpoint = 1;
constexpr int64_t kRecompute = 2;

// A recomputation checkpoint as PopART's Builder::checkpointOutput writes it:
// an ai.onnx Identity with __recompute_output_in_backward_pass = 1 (INT).
bool isCheckpoint(const ir::Node& n);
// The node's __recompute_output_in_backward_pass when it is an INT.
std::optional<int64_t> recomputeType(const ir::Node& n);

// The type PopART reads a `__` attribute as, if graphrw knows the attribute.
std::optional<onnx::AttributeProto_AttributeType> expectedType(const std::string& name);
// Problems with one attribute (wrong type, value out of range), empty when fine.
std::vector<std::string> checkAttribute(const onnx::AttributeProto& attribute);

}  // namespace graphrw::popart
