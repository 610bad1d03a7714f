#include "popart.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "embedded.h"
#include "ir.h"

namespace graphrw::popart {
namespace {

const nlohmann::json& table() {
  static const nlohmann::json t = nlohmann::json::parse(embedded::file("popart-attributes.json"))["node_attributes"];
  return t;
}


}  // namespace

std::optional<onnx::AttributeProto_AttributeType> expectedType(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) return std::nullopt;
  return ir::attributeTypeFromName((*it)["type"].get<std::string>());
}

std::vector<std::string> checkAttribute(const onnx::AttributeProto& a) {
  std::vector<std::string> problems;
  auto it = table().find(a.name());
  if (it == table().end()) return problems;
  const auto& spec = *it;
  auto expected = ir::attributeTypeFromName(spec["type"].get<std::string>());
  if (expected && a.type() != *expected) {
    problems.push_back("attribute '" + a.name() + "' is " + ir::attributeTypeName(a.type()) + " but PopART reads it as " +
                       ir::attributeTypeName(*expected));
    return problems;
  }
  auto range = [&](double v) {
    if (spec.contains("min") && v < spec["min"].get<double>())
      problems.push_back("attribute '" + a.name() + "' is " + std::to_string(v) + ", below " + spec["min"].dump());
    if (spec.contains("exclusive_min") && v <= spec["exclusive_min"].get<double>())
      problems.push_back("attribute '" + a.name() + "' must be above " + spec["exclusive_min"].dump());
    if (spec.contains("max") && v > spec["max"].get<double>())
      problems.push_back("attribute '" + a.name() + "' is above " + spec["max"].dump());
  };
  if (a.type() == onnx::AttributeProto::INT) {
    range(static_cast<double>(a.i()));
    if (spec.contains("values")) {
      bool ok = false;
      for (const auto& v : spec["values"]) ok |= v.get<int64_t>() == a.i();
      if (!ok) problems.push_back("attribute '" + a.name() + "' = " + std::to_string(a.i()) + " is not one of " + spec["values"].dump());
    }
  } else if (a.type() == onnx::AttributeProto::FLOAT) {
    range(a.f());
  } else if (a.type() == onnx::AttributeProto::STRING && spec.contains("values")) {
    bool ok = false;
    for (const auto& v : spec["values"]) ok |= v.get<std::string>() == a.s();
    if (!ok) problems.push_back("attribute '" + a.name() + "' = \"" + a.s() + "\" is not one of " + spec["values"].dump());
  } else if (a.type() == onnx::AttributeProto::STRINGS && spec.value("even_length", false) && a.strings_size() % 2 != 0) {
    problems.push_back("attribute '" + a.name() + "' has an odd number of strings; PopART reads it as key/value pairs");
  }
  return problems;
}

std::optional<int64_t> recomputeType(const ir::Node& n) {
  const ir::Attribute* a = n.attribute(kRecomputeAttribute);
  if (!a || a->type() != onnx::AttributeProto::INT) return std::nullopt;
  return a->proto.i();
}

bool isCheckpoint(const ir::Node& n) {
  return n.opType() == "Identity" && ir::isDefaultDomain(n.domain()) && recomputeType(n) == kCheckpoint;
}

}  // namespace graphrw::popart
