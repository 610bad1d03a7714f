#include "analysis/attributes.h"

#include <cmath>
#include <sstream>

#include "analysis/extensions.h"
#include "ir/ir.h"
#include "support/error.h"

namespace graphrw {

using onnx::AttributeProto;

std::optional<AttributeType> expectedAttributeType(const onnx::OpSchema* op, const std::string& name) {
  if (name.starts_with("__")) return ext::reservedType(name);
  if (!op) return std::nullopt;
  auto it = op->attributes().find(name);
  if (it == op->attributes().end()) return std::nullopt;
  return it->second.type;
}

namespace {

bool integral(const nlohmann::json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.2e18;
}

AttributeType guess(const nlohmann::json& v) {
  auto scalar = [](const nlohmann::json& x) {
    if (x.is_number_integer() || x.is_number_unsigned()) return AttributeProto::INT;
    if (x.is_number()) return AttributeProto::FLOAT;
    if (x.is_string()) return AttributeProto::STRING;
    return AttributeProto::UNDEFINED;
  };
  if (!v.is_array()) return scalar(v);
  AttributeType t = AttributeProto::INTS;
  for (const auto& x : v) {
    auto s = scalar(x);
    if (s == AttributeProto::STRING) return AttributeProto::STRINGS;
    if (s == AttributeProto::FLOAT) t = AttributeProto::FLOATS;
    if (s == AttributeProto::UNDEFINED) return AttributeProto::UNDEFINED;
  }
  return t;
}

}  // namespace

AttributeProto attributeFromJson(const std::string& name, const nlohmann::json& value,
                                 std::optional<AttributeType> expected, const std::string& where) {
  AttributeType type = expected ? *expected : guess(value);
  AttributeProto a;
  a.set_name(name);
  a.set_type(type);
  auto bad = [&](const std::string& why) -> AttributeProto {
    usageError(where + ": attribute '" + name + "' = " + value.dump() + " " + why);
  };
  auto typeName = std::string(ir::attributeTypeName(type));
  switch (type) {
    case AttributeProto::INT:
      if (value.is_boolean())
        a.set_i(value.get<bool>() ? 1 : 0);
      else if (integral(value))
        a.set_i(value.is_number_float() ? static_cast<int64_t>(value.get<double>()) : value.get<int64_t>());
      else
        return bad("cannot be written as INT");
      return a;
    case AttributeProto::FLOAT:
      if (!value.is_number()) return bad("cannot be written as FLOAT");
      a.set_f(value.get<float>());
      return a;
    case AttributeProto::STRING:
      if (!value.is_string()) return bad("cannot be written as STRING");
      a.set_s(value.get<std::string>());
      return a;
    case AttributeProto::INTS:
    case AttributeProto::FLOATS:
    case AttributeProto::STRINGS: {
      if (!value.is_array()) return bad("cannot be written as " + typeName + " (expected a list)");
      for (const auto& x : value) {
        if (type == AttributeProto::INTS) {
          if (!integral(x)) return bad("cannot be written as INTS");
          a.add_ints(x.is_number_float() ? static_cast<int64_t>(x.get<double>()) : x.get<int64_t>());
        } else if (type == AttributeProto::FLOATS) {
          if (!x.is_number()) return bad("cannot be written as FLOATS");
          a.add_floats(x.get<float>());
        } else {
          if (!x.is_string()) return bad("cannot be written as STRINGS");
          a.add_strings(x.get<std::string>());
        }
      }
      return a;
    }
    default:
      return bad(expected ? "has type " + typeName + ", which a rule cannot set" : "has no ONNX attribute type");
  }
}

std::optional<AttributeProto> convertAttribute(const AttributeProto& a, AttributeType expected) {
  if (a.type() == expected) return a;
  AttributeProto out;
  out.set_name(a.name());
  out.set_type(expected);
  if (a.type() == AttributeProto::INT && expected == AttributeProto::FLOAT) {
    out.set_f(static_cast<float>(a.i()));
    if (static_cast<int64_t>(out.f()) != a.i()) return std::nullopt;
    return out;
  }
  if (a.type() == AttributeProto::FLOAT && expected == AttributeProto::INT) {
    if (!std::isfinite(a.f()) || std::floor(a.f()) != a.f()) return std::nullopt;
    out.set_i(static_cast<int64_t>(a.f()));
    return out;
  }
  if (a.type() == AttributeProto::INTS && expected == AttributeProto::FLOATS) {
    for (int64_t v : a.ints()) out.add_floats(static_cast<float>(v));
    return out;
  }
  if (a.type() == AttributeProto::FLOATS && expected == AttributeProto::INTS) {
    for (float v : a.floats()) {
      if (!std::isfinite(v) || std::floor(v) != v) return std::nullopt;
      out.add_ints(static_cast<int64_t>(v));
    }
    return out;
  }
  return std::nullopt;
}

std::pair<std::string, nlohmann::json> parseAssignment(const std::string& text, const std::string& flag) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) usageError(flag + " '" + text + "': expected NAME=VALUE");
  std::string name = text.substr(0, eq), raw = text.substr(eq + 1);
  nlohmann::json value = nlohmann::json::parse(raw, nullptr, false);
  if (value.is_discarded()) value = raw;
  return {name, value};
}

onnx::AttributeProto intAttribute(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

std::optional<int64_t> intAttr(const ir::Node& n, std::string_view name) {
  const ir::Attribute* a = n.attribute(name);
  if (!a || a->type() != onnx::AttributeProto::INT) return std::nullopt;
  return a->proto().i();
}

int64_t intAttr(const ir::Node& n, std::string_view name, int64_t fallback) {
  return intAttr(n, name).value_or(fallback);
}

std::string attributeValueText(const onnx::AttributeProto& a) {
  auto number = [](double x) {
    std::ostringstream os;
    os << x;
    return os.str();
  };
  auto list = [](const auto& items, auto text) {
    std::string out = "[";
    int shown = 0;
    for (const auto& x : items) {
      if (shown++) out += ", ";
      if (shown > 8) {
        out += "...";
        break;
      }
      out += text(x);
    }
    return out + "]";
  };
  auto quoted = [](const std::string& s) { return "\"" + (s.size() > 40 ? s.substr(0, 40) + "..." : s) + "\""; };
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      return std::to_string(a.i());
    case onnx::AttributeProto::FLOAT:
      return number(a.f());
    case onnx::AttributeProto::STRING:
      return quoted(a.s());
    case onnx::AttributeProto::INTS:
      return list(a.ints(), [](int64_t x) { return std::to_string(x); });
    case onnx::AttributeProto::FLOATS:
      return list(a.floats(), number);
    case onnx::AttributeProto::STRINGS:
      return list(a.strings(), quoted);
    case onnx::AttributeProto::TENSOR:
      return "<tensor>";
    case onnx::AttributeProto::GRAPH:
      return "<graph>";
    default:
      return a.ref_attr_name().empty() ? "<value>" : "@" + a.ref_attr_name();
  }
}

}  // namespace graphrw
