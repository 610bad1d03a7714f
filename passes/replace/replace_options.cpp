#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>

#include "analysis/attributes.h"
#include "analysis/extensions.h"
#include "analysis/schemas.h"
#include "passes/replace/replace.h"
#include "passes/replace/template_check.h"
#include "passes/replace/template_text.h"
#include "support/error.h"
#include "support/json_text.h"
#include "support/text_file.h"

namespace graphrw::passes {

using ir::elementSize;

constexpr uintmax_t kMaxTemplateBytes = 1 << 20;

namespace {

int32_t dataTypeFromName(const std::string& name, const std::string& where) {
  static const std::map<std::string, int32_t> types = {
      {"float", onnx::TensorProto::FLOAT}, {"double", onnx::TensorProto::DOUBLE}, {"int64", onnx::TensorProto::INT64},
      {"int32", onnx::TensorProto::INT32}, {"int8", onnx::TensorProto::INT8},     {"uint8", onnx::TensorProto::UINT8},
      {"bool", onnx::TensorProto::BOOL}};
  auto it = types.find(name);
  if (it == types.end())
    usageError(where + ": constant type '" + name + "' is not one of float, double, int64, int32, int8, uint8, bool");
  return it->second;
}

}  // namespace

void parseTarget(const std::string& text, Replacement& r) {
  auto bad = [&] { usageError("replacement target '" + text + "': expected [DOMAIN::]OP[:VERSION]"); };
  auto identifier = [](std::string_view s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  };
  std::string_view rest = text;
  r.domain.clear();
  if (auto sep = rest.find("::"); sep != std::string_view::npos) {
    r.domain = std::string(rest.substr(0, sep));
    bool ok = std::all_of(r.domain.begin(), r.domain.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
    if (!ok) bad();
    rest.remove_prefix(sep + 2);
  }
  r.domain = ir::domainKey(r.domain);
  r.version = 0;
  if (auto colon = rest.find(':'); colon != std::string_view::npos) {
    std::string_view digits = rest.substr(colon + 1);
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      bad();
    r.version = std::stoll(std::string(digits));
    rest = rest.substr(0, colon);
  }
  if (!identifier(rest)) bad();
  r.opType = std::string(rest);
}

onnx::FunctionProto parseTemplate(const std::string& text, const std::string& where, TemplateRole role) {
  // ONNX 1.12's parser has no attribute references: `name = @formal` is read
  // as a marked string and turned into a reference once the op's schema gives its type.
  const std::string marker = "@graphrw-ref@";
  std::string prepared = prepareTemplateText(text, marker, where);
  onnx::FunctionProto fp;
  onnx::Common::Status status;
  try {
    status = onnx::OnnxParser::Parse(fp, prepared.c_str());
  } catch (const std::exception& e) {  // numbers it reads with std::stol / std::stof ("axes = [-q]", "1e999")
    usageError(where + ": the template does not parse: a number is malformed or out of range (" + e.what() + ")");
  }
  if (!status.IsOK()) {
    // Position and reason only: the parser's "Error context" line would echo
    // the file's text, whatever file the rule named.
    std::string msg, line;
    std::istringstream lines(status.ErrorMessage());
    while (std::getline(lines, line))
      if (!line.empty() && !line.starts_with("Error context")) msg += (msg.empty() ? "" : " ") + line;
    usageError(where + ": the template does not parse: " + msg);
  }
  if (fp.name().empty()) usageError(where + ": the template has no name");
  if (fp.domain().empty()) fp.set_domain("graphrw.template");
  std::map<std::string, int64_t> opsets;
  for (const auto& op : fp.opset_import()) opsets[ir::domainKey(op.domain())] = op.version();
  for (auto& node : *fp.mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.type() != onnx::AttributeProto::STRING || !a.s().starts_with(marker)) continue;
      std::string formal = a.s().substr(marker.size());
      // A formal is a declared attribute or (in patterns: a captured constant) a declared input.
      if (std::find(fp.attribute().begin(), fp.attribute().end(), formal) == fp.attribute().end() &&
          std::find(fp.input().begin(), fp.input().end(), formal) == fp.input().end())
        usageError(where + ": template node " + node.op_type() + ": attribute '" + a.name() + "' refers to @" +
                   formal.substr(0, 64) + (formal.size() > 64 ? "..." : "") +
                   ", which the template declares neither as an attribute nor as an input");
      auto imported = opsets.find(ir::domainKey(node.domain()));
      if (imported == opsets.end())
        usageError(where + ": template node " + node.op_type() + ": the template imports no opset for domain '" +
                   ir::domainShown(node.domain()) + "' (add it to opset_import)");
      auto version = imported->second;
      const onnx::OpSchema* schema = findSchema(node.op_type(), static_cast<int>(version), node.domain());
      auto type = expectedAttributeType(schema, a.name());
      if (!type)
        usageError(where + ": template node " + node.op_type() + ": attribute '" + a.name() + "' = @" + formal +
                   ": the op's schema does not give this attribute a type");
      a.clear_s();
      a.set_type(*type);
      a.set_ref_attr_name(formal);
    }
  }
  checkTemplate(fp, role, where, marker);
  return fp;
}

ReplaceInput constantInput(const nlohmann::json& j, const std::string& where) {
  ReplaceInput in;
  in.kind = ReplaceInput::Kind::Constant;
  const auto& value = j.at("constant");
  std::vector<int64_t> shape;
  std::vector<double> flat;
  std::function<void(const nlohmann::json&, size_t)> walk = [&](const nlohmann::json& v, size_t depth) {
    if (v.is_array()) {
      if (shape.size() <= depth)
        shape.push_back(static_cast<int64_t>(v.size()));
      else if (shape[depth] != static_cast<int64_t>(v.size()))
        usageError(where + ": the constant's nested lists are ragged");
      for (const auto& x : v) walk(x, depth + 1);
    } else if (v.is_number() || v.is_boolean()) {
      flat.push_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
    } else {
      usageError(where + ": a constant holds numbers");
    }
  };
  walk(value, 0);
  bool allIntegral = std::all_of(flat.begin(), flat.end(), [](double d) { return std::floor(d) == d; }) &&
                     !j.at("constant").dump().empty() && j.at("constant").dump().find('.') == std::string::npos;
  std::string type = j.value("type", allIntegral ? "int64" : "float");
  in.constant.type = dataTypeFromName(type, where);
  in.constant.dims = j.contains("dims") ? j["dims"].get<std::vector<int64_t>>() : shape;
  if (in.constant.count() != static_cast<int64_t>(flat.size()))
    usageError(where + ": dims hold " + std::to_string(in.constant.count()) + " elements, the constant " +
               std::to_string(flat.size()));
  size_t es = elementSize(in.constant.type);
  in.constant.data.resize(flat.size() * es);
  for (size_t i = 0; i < flat.size(); ++i) {
    char* p = in.constant.data.data() + i * es;
    switch (in.constant.type) {
      case onnx::TensorProto::FLOAT: {
        float v = static_cast<float>(flat[i]);
        std::memcpy(p, &v, es);
        break;
      }
      case onnx::TensorProto::DOUBLE:
        std::memcpy(p, &flat[i], es);
        break;
      case onnx::TensorProto::INT64: {
        int64_t v = static_cast<int64_t>(flat[i]);
        std::memcpy(p, &v, es);
        break;
      }
      case onnx::TensorProto::INT32: {
        int32_t v = static_cast<int32_t>(flat[i]);
        std::memcpy(p, &v, es);
        break;
      }
      case onnx::TensorProto::INT8: {
        int8_t v = static_cast<int8_t>(flat[i]);
        std::memcpy(p, &v, es);
        break;
      }
      default: {
        uint8_t v = static_cast<uint8_t>(flat[i]);
        std::memcpy(p, &v, es);
        break;
      }
    }
  }
  return in;
}

std::vector<ReplaceInput> inputsFromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) usageError(where + ": inputs must be a list");
  std::vector<ReplaceInput> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& x = j[i];
    std::string at = where + "/" + std::to_string(i);
    if (x.is_null())
      out.push_back({ReplaceInput::Kind::Missing, 0, {}});
    else if (x.is_number_unsigned() || (x.is_number_integer() && x.get<int64_t>() >= 0))
      out.push_back({ReplaceInput::Kind::Index, x.get<size_t>(), {}});
    else if (x.is_object() && x.contains("constant"))
      out.push_back(constantInput(x, at));
    else
      usageError(at + ": an input is the node's input index, null (missing) or {\"constant\": ...}");
  }
  return out;
}

ReplaceOptions replaceOptionsFromJson(const nlohmann::json& given, const RuleContext& rules,
                                      const std::string& pointer) {
  const nlohmann::json j = withDefaults(kReplacePass, given);
  ReplaceOptions o;
  auto at = [&](const std::string& p) { return rules.at(p); };
  o.allowUnknownOp = j.at("allow_unknown_op").get<bool>();
  o.allowNoMatch = j.at("allow_no_match").get<bool>();
  o.fold = j.at("fold").get<bool>();
  o.keepParameters = j.at("keep_parameters").get<bool>();
  const auto& list = j["replacements"];
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    std::string p = pointer + "/replacements/" + std::to_string(i);
    Replacement r;
    r.where = rules.at(p);
    r.select = SelectorSet::fromJson(e["select"], at, p + "/select");
    if (e.contains("with")) {
      try {
        parseTarget(e["with"].get<std::string>(), r);
      } catch (const Error& err) {
        usageError(rules.at(p + "/with") + ": " + err.what());
      }
      // ai.onnx and ai.graphcore targets are checked before any model is read
      // (a typo must not pass because nothing matched); other domains may be
      // a model's local functions and are checked against the model.
      if (!o.allowUnknownOp && (r.domain.empty() || ext::domainVersion(r.domain))) {
        ext::registerSchemas();
        const std::string domain = r.domain;
        bool known = false;
        std::vector<std::string> names;
        for (const auto& schema : allSchemas()) {
          if (schema.domain() != domain) continue;
          names.push_back(schema.Name());
          known |= schema.Name() == r.opType;
        }
        if (!known) {
          std::string msg = rules.at(p + "/with") + ": " + ir::domainShown(domain) + " has no op '" + r.opType + "'";
          if (auto near = didYouMean(r.opType, names)) msg += " (did you mean '" + *near + "'?)";
          usageError(msg + "; allow_unknown_op writes it anyway");
        }
      }
      if (e.contains("set"))
        for (const auto& [k, v] : e["set"].items()) r.set.emplace_back(k, v);
      if (e.contains("rename"))
        for (const auto& [k, v] : e["rename"].items()) r.rename.emplace_back(k, v.get<std::string>());
      if (e.contains("drop")) r.drop = e["drop"].get<std::vector<std::string>>();
      if (e.contains("inputs")) r.inputs = inputsFromJson(e["inputs"], rules.at(p + "/inputs"));
      if (e.contains("outputs")) r.outputs = e["outputs"].get<std::vector<int>>();
    } else {
      for (const char* key : {"set", "rename", "drop", "inputs", "outputs"})
        if (e.contains(key))
          usageError(rules.at(p + "/" + key) + ": only an op replacement (with) takes " + key +
                     "; a template gets the node's inputs, outputs and attributes as its formal parameters");
      std::string text;
      if (e.contains("template")) {
        text = e["template"].get<std::string>();
      } else {
        std::filesystem::path file = e["template_file"].get<std::string>();
        if (file.is_relative()) file = rules.baseDir() / file;
        std::string where = rules.at(p + "/template_file");
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec))
          usageError(where + ": " + file.string() + " is not a regular file");
        if (std::filesystem::file_size(file, ec) > kMaxTemplateBytes)
          usageError(where + ": " + file.string() + " is over " + std::to_string(kMaxTemplateBytes) +
                     " bytes; not a template");
        text = readTextFile(file.string(), "template file");
      }
      r.templ = parseTemplate(text, rules.at(p + (e.contains("template") ? "/template" : "/template_file")));
    }
    o.replacements.push_back(std::move(r));
  }
  return o;
}

}  // namespace graphrw::passes
