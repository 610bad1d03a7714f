// opset: convert a model's ai.onnx ops to another opset version, up or down
// (main graph, subgraphs, and functions that import ai.onnx), and set the IR
// version. Every node that has no form at the target is listed in one error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "pass/pass.h"

namespace graphrw::passes {

inline constexpr const char* kOpsetPass = "opset";

struct OpsetOptions {
  std::optional<int64_t> to;  // the ai.onnx version wanted
  std::optional<int64_t> irVersion;  // the IR version wanted
  // Training-mode Dropout and BatchNormalization get the forms a runtime applies
  // in training sessions (PopART); constants added are Constant nodes.
  bool training = false;
};

std::unique_ptr<Pass> createOpsetPass(OpsetOptions options);

}  // namespace graphrw::passes
