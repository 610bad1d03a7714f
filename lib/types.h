// Value types from ONNX's shape inference, for passes that need them
// (context-dependent function bodies, outlining's equivalence test).
#pragma once

#include "ir.h"

namespace graphrw {

// Gives values of the main graph and its subgraphs that have no type the
// type ONNX's shape inference finds (function bodies are left alone).
// Inference failures are logged at debug level and leave types unknown.
void inferMissingTypes(ir::Model& model);

}  // namespace graphrw
