// Attribute values from rule files and the command line, written with the type
// their op expects (the ONNX schema, graphrw's ai.graphcore data, PopART's `__`
// table), never the type JSON happens to have: PopART reads attributes without
// checking their type, so an INT where it wants a FLOAT silently reads as 0.
#pragma once

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "ir/tensor.h"  // the IR's forward declarations

namespace graphrw {

using AttributeType = onnx::AttributeProto_AttributeType;

// The type `op` (may be null: unknown op) expects for attribute `name`:
// from the schema, or from PopART's table for `__` attributes; nothing when unknown.
std::optional<AttributeType> expectedAttributeType(const onnx::OpSchema* op, const std::string& name);

// Builds the attribute from a JSON value with the expected type, or the type
// the JSON suggests when nothing is expected (integer -> INT, number -> FLOAT,
// string -> STRING, arrays -> INTS/FLOATS/STRINGS). Throws Error(Usage)
// prefixed with `where` when the value cannot take the type.
onnx::AttributeProto attributeFromJson(const std::string& name, const nlohmann::json& value,
                                       std::optional<AttributeType> expected, const std::string& where);

// An existing attribute converted to `expected` when that loses nothing
// (INT <-> FLOAT for integral values, INTS <-> FLOATS); nothing otherwise.
std::optional<onnx::AttributeProto> convertAttribute(const onnx::AttributeProto& a, AttributeType expected);

// A short text of an attribute's value for messages: 1, 0.5, [1, 2], "text", <tensor>.
std::string attributeValueText(const onnx::AttributeProto& a);

// An INT attribute `name` = `value`.
onnx::AttributeProto intAttribute(const std::string& name, int64_t value);

// The value of `n`'s INT attribute `name`: nothing when it has none of that
// name or it is not an INT; with `fallback`, that instead of nothing.
std::optional<int64_t> intAttr(const ir::Node& n, std::string_view name);
int64_t intAttr(const ir::Node& n, std::string_view name, int64_t fallback);

// NAME=VALUE from the command line: VALUE as JSON when it parses, else as a string.
std::pair<std::string, nlohmann::json> parseAssignment(const std::string& text, const std::string& flag);

}  // namespace graphrw
