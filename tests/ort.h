// Drives ONNX Runtime (tests/ort/ort.js, from npm) from the C++ tests.
#pragma once

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace graphrw::test {

// Runs both models on the same pseudo-random inputs; returns ORT's report
// ({"ok": bool, "outputs": {name: worst excess}, "error"?}).
nlohmann::json ortCompare(const std::filesystem::path& a, const std::filesystem::path& b, double tol = 1e-5,
                          int intMax = 2);

struct OrtCase {
  std::filesystem::path model;
  std::vector<onnx::TensorProto> inputs;  // named as the model's inputs
};
struct OrtResult {
  bool ok = false;
  std::string error;
  std::vector<nlohmann::json> outputs;  // {"name", "type", "dims", "data" (base64)}
};
std::vector<OrtResult> ortRun(const std::vector<OrtCase>& cases);

// Element-wise comparison of an ORT output with an expected TensorProto.
// Returns "" when equal within atol + rtol * |expected|, else what differs.
std::string compareTensor(const nlohmann::json& actual, const onnx::TensorProto& expected, double rtol, double atol);

}  // namespace graphrw::test
