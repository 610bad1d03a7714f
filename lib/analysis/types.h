// Value types from ONNX's shape inference, for passes that need them
// (context-dependent function bodies, outlining's equivalence test).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <vector>

#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw {

// Types are annotations (Rewriter::setType), not edits of what is written.
// Gives values of the main graph and its subgraphs that have no type the
// type ONNX's shape inference finds (function bodies are left alone).
// Inference failures are logged at debug level and leave types unknown.
void inferMissingTypes(ir::Rewriter& rw);
// The same for the given values only (values of the main graph or its subgraphs);
// cheaper on large models when a pass needs a few types. Other values typed on
// the way lose their types again as soon as inference has passed them.
void inferMissingTypes(ir::Rewriter& rw, const std::vector<ir::Value*>& wanted);

// Per-node inference through the main graph and its subgraphs, in order, for
// values without a type; small constant inputs (shapes) are read. Cheap: no
// ModelProto is built.
void inferInOrder(ir::Rewriter& rw);

// Types inside function bodies: a body input whose call sites agree on its
// type (where it is known) gets it, and per-node inference runs through the body; the calls'
// outputs get the body's output types. Polymorphic bodies stay untyped.
void inferFunctionTypes(ir::Rewriter& rw);

// A type as people write it: "float[batch,128]", "int64" (rank unknown), "?" (no type).
std::string typeString(const onnx::TypeProto* type);

// The value's shape when its type is known and every dimension is a number.
std::optional<std::vector<int64_t>> staticShape(const ir::Value* v);
// Whether a type is a tensor whose every dimension is a number.
bool fullyStatic(const onnx::TypeProto& t);

// Values made by nodes (main graph and subgraphs) whose type is not static
// ("float[1,?,16]": an export's value_info written before shapes were fixed
// and shape computations folded) are inferred again; a static type found
// that agrees with the old one (element type, rank, fixed dimensions)
// replaces it, declared where the old one was (value_info, graph output).
// The others keep their type. Returns how many declarations were made static.
size_t refreshDynamicTypes(ir::Rewriter& rw);

}  // namespace graphrw
