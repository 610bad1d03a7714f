// `graphrw validate`: ONNX's checker, strict shape inference, graphrw's IR
// verifier and PopART attribute types, each finding one line.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace graphrw {

struct ValidationFinding {
  std::string check;  // "checker", "shape-inference", "verifier", "popart"
  std::string where;
  std::string message;
};

std::vector<ValidationFinding> validateModel(ir::Model& model);

}  // namespace graphrw
