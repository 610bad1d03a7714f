#include "target/popart/graphcore_ops.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>
#include <string_view>

#include "analysis/schemas.h"
#include "ir/ir.h"
#include "support/embedded.h"

namespace graphrw {
namespace {

using onnx::InferenceContext;

void firstInput(InferenceContext& ctx) { onnx::propagateShapeAndTypeFromFirstInput(ctx); }

void elemTypeOnly(InferenceContext& ctx) {
  if (ctx.getNumInputs() == 0 || !ctx.getInputType(0)) return;
  for (size_t i = 0; i < ctx.getNumOutputs(); ++i) onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
}

void groupNormalization(InferenceContext& ctx) {
  for (size_t i = 0; i < ctx.getNumOutputs(); ++i) onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
  if (!onnx::hasInputShape(ctx, 0)) return;
  onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  const auto& shape = ctx.getInputType(0)->tensor_type().shape();
  int64_t groups = onnx::getAttribute(ctx, "num_groups", static_cast<int64_t>(1));
  if (shape.dim_size() > 0 && shape.dim(0).has_dim_value())
    for (size_t i = 1; i < ctx.getNumOutputs() && i < 3; ++i)
      ctx.getOutputType(i)->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(groups *
                                                                                             shape.dim(0).dim_value());
}

void broadcast(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (onnx::hasNInputShapes(ctx, 2))
    onnx::bidirectionalBroadcastShapeInference(ctx.getInputType(0)->tensor_type().shape(),
                                               ctx.getInputType(1)->tensor_type().shape(),
                                               *ctx.getOutputType(0)->mutable_tensor_type()->mutable_shape());
}

void loss(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  std::string reduction = onnx::getAttribute(ctx, "reduction", "Mean");
  if (reduction == "None") {
    if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  } else {
    onnx::updateOutputShape(ctx, 0, onnx::TensorShapeProto());
  }
}

// Types of a Call's outputs from its callee, as PopART's own inference does.
void call(InferenceContext& ctx) {
  onnx::GraphInferencer* inferencer = ctx.getGraphAttributeInferencer("callee");
  if (!inferencer) return;
  std::vector<const onnx::TypeProto*> types;
  std::vector<const onnx::TensorProto*> data;
  for (size_t i = 0; i < ctx.getNumInputs(); ++i) {
    types.push_back(ctx.getInputType(i));
    data.push_back(ctx.getInputData(i));
  }
  auto outputs = inferencer->doInferencing(types, data);
  if (outputs.empty()) return;
  if (outputs.size() != ctx.getNumOutputs())
    fail_type_inference("Call: the callee has ", outputs.size(), " outputs but the node has ", ctx.getNumOutputs());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]->has_tensor_type()) fail_type_inference("Call: callee output ", i, " is not a tensor");
    onnx::propagateElemTypeWithValidation(outputs[i], ctx.getOutputType(i));
    onnx::mergeInShapeInfo(outputs[i]->tensor_type(), *ctx.getOutputType(i)->mutable_tensor_type());
  }
}

onnx::AttributeProto_AttributeType attributeType(const std::string& name) {
  if (auto t = ir::attributeTypeFromName(name)) return *t;
  throw std::logic_error("schemas/graphcore-ops.json: unknown attribute type " + name);
}

onnx::OpSchema build(const std::string& name, const nlohmann::json& op, const nlohmann::json& sets,
                     const std::string& domain, int version) {
  onnx::OpSchema s(name, "schemas/graphcore-ops.json", 0);
  s.SetDomain(domain).SinceVersion(version).SetDoc(op.value("doc", ""));
  // PopART ships these ops: COMMON, or the checker prints a warning per node.
  s.SetSupportLevel(onnx::OpSchema::SupportType::COMMON);
  auto formal = [](const nlohmann::json& io) {
    if (io.value("variadic", false)) return onnx::OpSchema::Variadic;
    if (io.value("optional", false)) return onnx::OpSchema::Optional;
    return onnx::OpSchema::Single;
  };
  int i = 0;
  for (const auto& in : op["inputs"]) {
    s.Input(i++, in["name"].get<std::string>(), "", in["type"].get<std::string>(), formal(in), true,
            in.value("variadic", false) ? 0 : 1);
  }
  i = 0;
  for (const auto& out : op["outputs"])
    s.Output(i++, out["name"].get<std::string>(), "", out["type"].get<std::string>(), formal(out), true,
             out.value("variadic", false) ? 0 : 1);
  for (const auto& [param, types] : op["types"].items()) {
    const nlohmann::json& list = types.is_string() ? sets.at(types.get<std::string>()) : types;
    s.TypeConstraint(param, list.get<std::vector<std::string>>(), "");
  }
  for (const auto& [attr, spec] : op["attributes"].items()) {
    auto type = attributeType(spec["type"].get<std::string>());
    if (!spec.contains("default")) {
      s.Attr(attr, "", type, spec.value("required", false));
      continue;
    }
    const auto& d = spec["default"];
    switch (type) {
      case onnx::AttributeProto::FLOAT:
        s.Attr(attr, "", type, d.get<float>());
        break;
      case onnx::AttributeProto::INT:
        s.Attr(attr, "", type, d.get<int64_t>());
        break;
      case onnx::AttributeProto::STRING:
        s.Attr(attr, "", type, d.get<std::string>());
        break;
      default:
        throw std::logic_error("schemas/graphcore-ops.json: default of " + name + "." + attr + " not supported");
    }
  }
  std::string inference = op.value("inference", "none");
  if (inference == "first_input")
    s.TypeAndShapeInferenceFunction(firstInput);
  else if (inference == "group_normalization")
    s.TypeAndShapeInferenceFunction(groupNormalization);
  else if (inference == "broadcast")
    s.TypeAndShapeInferenceFunction(broadcast);
  else if (inference == "loss")
    s.TypeAndShapeInferenceFunction(loss);
  else if (inference == "call")
    s.TypeAndShapeInferenceFunction(call);
  else if (inference == "nothing")
    s.TypeAndShapeInferenceFunction([](InferenceContext&) {});
  else
    s.TypeAndShapeInferenceFunction(elemTypeOnly);
  return s;
}

}  // namespace

const nlohmann::json& graphcoreOpsData() {
  static const nlohmann::json data = nlohmann::json::parse(embedded::file("graphcore-ops.json"));
  return data;
}

std::optional<PopartVersion> parsePopartVersion(std::string_view text) {
  auto number = [](std::string_view s) -> std::optional<int> {
    if (s.empty() || s.size() > 3) return std::nullopt;
    int v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + (c - '0');
    }
    return v;
  };
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto major = number(text.substr(0, dot)), minor = number(text.substr(dot + 1));
  if (!major || !minor) return std::nullopt;
  return PopartVersion{*major, *minor};
}

PopartVersion newestPopart() {
  static const PopartVersion newest = *parsePopartVersion(graphcoreOpsData()["popart_newest"].get<std::string>());
  return newest;
}

std::optional<PopartVersion> graphcoreOpSince(const std::string& op) {
  const auto& ops = graphcoreOpsData()["ops"];
  auto it = ops.find(op);
  if (it == ops.end() || !it->contains("since")) return std::nullopt;
  return parsePopartVersion((*it)["since"].get<std::string>());
}

void registerGraphcoreOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    const auto& data = graphcoreOpsData();
    std::string domain = data["domain"];
    int version = data["version"];
    std::vector<onnx::OpSchema> schemas;
    for (const auto& [name, op] : data["ops"].items())
      schemas.push_back(build(name, op, data["type_sets"], domain, version));
    registerDomain(domain, version, std::move(schemas));
  });
}

}  // namespace graphrw
