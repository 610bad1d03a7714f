// PopART's ai.graphcore opset 1 ops (schemas/graphcore-ops.json), registered
// with ONNX's schema registry so the checker, shape inference and graphrw's
// own attribute typing treat them like standard ops.
#pragma once

#include <nlohmann/json.hpp>

namespace graphrw {

// Registers the ops once per process (thread-safe); later calls do nothing.
void registerGraphcoreOps();
// The data file, parsed.
const nlohmann::json& graphcoreOpsData();

}  // namespace graphrw
