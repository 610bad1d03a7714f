#include "types.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <google/protobuf/arena.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <string_view>
#include <unordered_map>

#include "graphcore_ops.h"
#include "writer.h"

namespace graphrw {

using namespace ir;

namespace {

// Runs ONNX's shape inference on the main graph; calls `give(name, type)` for
// every value name it found a type for when `wantedName(name)` says so.
template <typename Wanted, typename Give>
void infer(Model& model, Wanted wantedName, Give give) {
  registerGraphcoreOps();
  auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // On an arena: a million-node model's messages are freed at once, not one by one.
  google::protobuf::Arena arena;
  auto& proto = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  buildProtoWithoutPayloads(model, proto);
  spdlog::debug("types: proto built {:.3f}s", since());
  try {
    onnx::ShapeInferenceOptions options(false, 0, true);
    onnx::shape_inference::InferShapes(proto, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    spdlog::debug("shape inference failed: {}", e.what());
  }
  spdlog::debug("types: ONNX shape inference done {:.3f}s", since());
  std::function<void(const onnx::GraphProto&)> collect = [&](const onnx::GraphProto& gp) {
    for (const auto& vi : gp.value_info())
      if (vi.type().value_case() != 0 && wantedName(vi.name())) give(vi.name(), vi.type());
    for (const auto& vi : gp.output())
      if (vi.type().value_case() != 0 && wantedName(vi.name())) give(vi.name(), vi.type());
    for (const auto& n : gp.node())
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect(a.g());
        for (const auto& sub : a.graphs()) collect(sub);
      }
  };
  collect(proto.graph());
  spdlog::debug("types: collected {:.3f}s", since());
}

}  // namespace

void inferMissingTypes(Model& model) {
  // Every untyped value of the main graph and its subgraphs, by name.
  std::unordered_map<std::string_view, std::vector<Value*>> untyped;
  model.graph().walkGraphs([&](Graph& g) {
    for (const auto& v : g.values())
      if (!v->type()) untyped[v->name()].push_back(v.get());
  });
  infer(model, [&](const std::string& name) { return untyped.count(name) > 0; },
        [&](const std::string& name, const onnx::TypeProto& type) {
          for (Value* v : untyped[name])
            if (!v->type()) v->setType(type);
        });
}

void inferMissingTypes(Model& model, const std::vector<Value*>& wanted) {
  std::unordered_map<std::string_view, std::vector<Value*>> untyped;
  for (Value* v : wanted)
    if (v && !v->type()) untyped[v->name()].push_back(v);
  if (untyped.empty()) return;
  infer(model, [&](const std::string& name) { return untyped.count(name) > 0; },
        [&](const std::string& name, const onnx::TypeProto& type) {
          for (Value* v : untyped[name])
            if (!v->type()) v->setType(type);
        });
}

}  // namespace graphrw
