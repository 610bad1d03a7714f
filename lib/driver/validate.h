// `graphrw validate`: ONNX's checker, strict shape inference, graphrw's IR
// verifier and PopART attribute types, each finding one line.
#pragma once

#include <string>
#include <vector>

#include "ir.h"

namespace graphrw {

struct ValidationFinding {
  std::string check;  // "checker", "shape-inference", "verifier", "popart"
  std::string where;
  std::string message;
};

std::vector<ValidationFinding> validateModel(ir::Model& model);

// ONNX's full model check (checker and strict shape inference) on the model's
// protobuf form; external data is looked up in the model's folder. Throws
// onnx::checker::ValidationError or onnx::InferenceError.
void onnxCheck(const onnx::ModelProto& proto, const std::string& modelDir);

}  // namespace graphrw
