// Opset imports when bodies move between scopes (inlining): compatibility of
// two versions of a domain for the ops a body uses, and version conversion.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw {

// The ops of `domain` used in `body` (subgraphs included) whose schema differs
// between opset versions `a` and `b` (different since_version, or no schema).
std::vector<std::string> differingOps(const ir::Graph& body, const std::string& domain, int64_t a, int64_t b);

// The opset imports in force for a graph: the model's for the main graph and
// its subgraphs, the function's for a function body and its subgraphs.
std::map<std::string, int64_t> scopeOpsets(const ir::Model& model, const ir::Graph& graph);

// What a model uses: functions reachable by calls from the main graph, and the
// domains of all nodes (main graph, subgraphs, function bodies).
struct ModelUsage {
  std::set<ir::FunctionKey> reachable;
  std::set<std::string> domains;
  static ModelUsage of(const ir::Model& model);
};
// The model's functions with every function after the functions it calls
// (the model must have no call cycle: the loader refuses those).
std::vector<ir::Function*> functionsCalleesFirst(const ir::Model& model);
// How many nodes the main graph would have with every call of a local
// function inlined, recursively (subgraph nodes included); saturates at UINT64_MAX.
uint64_t expandedNodeCount(const ir::Model& model);

// How deep calls of local functions nest from the main graph (0: no calls).
size_t callDepth(const ir::Model& model);

// After a rewrite: removes the functions reachable before and not any more,
// and the opset imports of domains used before and not any more. Functions
// never called stay (as in ONNX's inliner). Returns the removed functions' names.
std::vector<std::string> pruneUnused(ir::Rewriter& rw, const ModelUsage& before);

// The newest ai.onnx opset the ONNX library knows.
int64_t newestOpset();
// The IR version ONNX's version table pairs with an ai.onnx opset.
int64_t irVersionFor(int64_t opset);

// A copy of `function` whose ai.onnx ops are converted from version `from` to
// `to`: by the converter set below (the opset pass registers its own, which
// knows forms ONNX's converter crashes on), else by ONNX's version converter.
// Throws Error naming the function.
std::unique_ptr<ir::Function> convertFunction(ir::Model& model, const ir::Function& function, int64_t from, int64_t to);
using FunctionConverter = std::unique_ptr<ir::Function> (*)(ir::Model& model, const ir::Function& function,
                                                            int64_t from, int64_t to);
void setFunctionConverter(FunctionConverter converter);
// A function body as a model of its own (its formal inputs and outputs the
// graph's) importing ai.onnx `from`: what a converter runs on.
onnx::ModelProto functionAsModel(const onnx::FunctionProto& fp, int64_t irVersion, int64_t from);
// `fp` takes the converted model's nodes (its initializers as Constant nodes
// first) and imports ai.onnx `to`.
void takeConvertedBody(onnx::FunctionProto& fp, const onnx::ModelProto& converted, int64_t to);

}  // namespace graphrw
