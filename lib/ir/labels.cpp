// The IR's naming helpers: how messages name nodes, ops, data and attribute types.
#include <iterator>
#include <string>

#include "ir/ir.h"

namespace graphrw::ir {

bool isDefaultDomain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }
std::string domainKey(std::string_view domain) { return isDefaultDomain(domain) ? std::string() : std::string(domain); }
std::string domainShown(std::string_view domain) { return isDefaultDomain(domain) ? "ai.onnx" : std::string(domain); }

std::string nodeLabel(const Node& node) {
  if (node.name().empty())  // unnamed: named by what it produces
    for (const Value* v : node.outputs())
      if (v) return "the node producing '" + v->name() + "' (" + opName(node) + ")";
  return "node '" + node.name() + "' (" + opName(node) + ")";
}

std::string opName(const Node& node) { return domainShown(node.domain()) + "::" + node.opType(); }

const char* dataTypeName(int32_t t) {
  static const char* names[] = {"undefined", "float",  "uint8",     "int8",       "uint16",  "int16",
                                "int32",     "int64",  "string",    "bool",       "float16", "double",
                                "uint32",    "uint64", "complex64", "complex128", "bfloat16"};
  return t >= 0 && t < static_cast<int32_t>(std::size(names)) ? names[t] : "unknown";
}

// protobuf's own names for AttributeProto.AttributeType ("FLOAT", "INTS", ...).
std::string attributeTypeName(int t) {
  if (onnx::AttributeProto_AttributeType_IsValid(t))
    return onnx::AttributeProto_AttributeType_Name(static_cast<onnx::AttributeProto_AttributeType>(t));
  return "type " + std::to_string(t);
}

std::optional<onnx::AttributeProto_AttributeType> attributeTypeFromName(std::string_view name) {
  onnx::AttributeProto_AttributeType t;
  if (onnx::AttributeProto_AttributeType_Parse(std::string(name), &t)) return t;
  return std::nullopt;
}

}  // namespace graphrw::ir
