// Helpers shared by the pass tests.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "pass/pass.h"
#include "pass/selector.h"

namespace graphrw::test {

// Loads `proto`, runs the pass through a verifying pass manager, returns the model.
std::unique_ptr<ir::Model> runPass(const onnx::ModelProto& proto, std::unique_ptr<Pass> pass,
                                   nlohmann::json* report = nullptr);
SelectorSet sel(const std::string& text);
std::vector<std::string> nodeNames(const ir::Graph& g);
ir::Node* byName(const ir::Graph& g, const std::string& name);
// Nodes of the main graph with this op type.
size_t countOp(const onnx::ModelProto& m, const std::string& op);
// "domain::op" -> count over the main graph, its subgraphs and every function body.
std::map<std::string, size_t> opCounts(const onnx::ModelProto& m);
// Writes before/after and checks ONNX Runtime gives the same outputs.
void checkSameMaths(const onnx::ModelProto& before, ir::Model& after, double tol = 1e-5, int intMax = 2);
void checkSameMaths(const onnx::ModelProto& before, const onnx::ModelProto& after, double tol = 1e-5, int intMax = 2);
// graphrw validate finds nothing (checker, strict shape inference, verifier, PopART attribute types).
void checkValid(ir::Model& m);

// Standard ONNX for ONNX Runtime from a model with PopART ops: Calls inlined
// (graphrw's expand), ai.graphcore::GroupNormalization (num_groups 1, 2-D,
// unused Mean and Var), GeluErf and Gelu by their definitions. `original` is
// left as it is.
onnx::ModelProto mapBack(ir::Model& original);

// What a user of examples/popart.rules.json runs first on a PyTorch export
// (docs/popart.md): set-shapes fixing `batch` to 1 and `sequence` to 8 where
// the model's inputs declare them; nullptr when they declare neither.
std::unique_ptr<Pass> exportShapes(const ir::Model& m);

}  // namespace graphrw::test
