#include "types.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <map>

#include "graphcore_ops.h"
#include "writer.h"

namespace graphrw {

using namespace ir;

void inferMissingTypes(Model& model) {
  registerGraphcoreOps();
  onnx::ModelProto proto = toProto(model);
  try {
    onnx::ShapeInferenceOptions options(false, 0, true);
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    spdlog::debug("shape inference failed: {}", e.what());
  }
  std::map<std::string, const onnx::TypeProto*> types;
  std::function<void(const onnx::GraphProto&)> collect = [&](const onnx::GraphProto& gp) {
    for (const auto& vi : gp.value_info()) types[vi.name()] = &vi.type();
    for (const auto& vi : gp.output()) types[vi.name()] = &vi.type();
    for (const auto& n : gp.node())
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect(a.g());
        for (const auto& sub : a.graphs()) collect(sub);
      }
  };
  collect(proto.graph());
  model.graph().walkGraphs([&](Graph& g) {
    for (const auto& v : g.values())
      if (!v->type())
        if (auto it = types.find(v->name()); it != types.end() && it->second->value_case() != 0) v->setType(*it->second);
  });
}

}  // namespace graphrw
