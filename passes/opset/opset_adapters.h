// graphrw's own version adapters for the opset pass (internal to it).
//
// A step takes one node from ai.onnx version V (where its op's schema changed)
// to V-1 (down). Three kinds of knowledge decide a step, asked in this order:
//  1. a graphrw adapter for (op, V): code that rewrites the node (Softmax's
//     axis, Squeeze's axes input, Shape's start/end, ...);
//  2. a known harmless change at (op, V): types added, or an attribute added
//     whose value for the node says "behave as before" (it is dropped);
//  3. ONNX's converter, when it registers an adapter for that step.
// Nothing else is assumed: an unknown change is a refusal, never a guess.
#pragma once

#include <onnx/defs/schema.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fold/weights.h"
#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw::passes::opset {

struct StepContext {
  ir::Rewriter& rw;
  WeightFolder& weights;
  int64_t version;  // the step goes from `version` down to version - 1
  bool training = false;  // OpsetOptions::training
};

// What an adapter did: the nodes that now stand for the node (they continue
// their conversion at version - 1), or why it cannot.
struct StepResult {
  std::vector<ir::Node*> nodes;
  std::string refused;
};

using Adapter = StepResult (*)(ir::Node* n, StepContext& c);

// graphrw's adapter for the step of `op` from `version` to version - 1.
Adapter downAdapter(const std::string& op, int64_t version);

// A change of `op` at `version` that needs no rewrite: types only, or an
// added attribute (dropped going down when the node's value is `oldValue`).
struct KnownChange {
  std::string attribute;  // "" for a types-only change
  onnx::AttributeProto oldValue;
};
const KnownChange* knownChange(const std::string& op, int64_t version);

// Drops the attribute of a KnownChange going down; "" or why it cannot.
std::string applyKnownChange(ir::Node* n, const KnownChange& change, const onnx::OpSchema& from, ir::Rewriter& rw);

// Whether the node's input and output types (where known) are allowed by
// `schema`, each type parameter bound to one type; "" or why not.
std::string checkTypes(const ir::Node& n, const onnx::OpSchema& schema);

}  // namespace graphrw::passes::opset
