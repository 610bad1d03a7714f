// What graphrw knows about PopART's `__` node attributes (schemas/popart-attributes.json).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace graphrw::ir {
class Graph;
class Node;
class Rewriter;
}  // namespace graphrw::ir

namespace graphrw::popart {

// RecomputeType (willow/include/popart/op.hpp).
constexpr const char* kRecomputeAttribute = "__recompute_output_in_backward_pass";
constexpr int64_t kCheckpoint = 1;
constexpr int64_t kRecompute = 2;

// A recomputation checkpoint as PopART's Builder::checkpointOutput writes it:
// an ai.onnx Identity with __recompute_output_in_backward_pass = 1 (INT).
bool isCheckpoint(const ir::Node& n);
// The node's __recompute_output_in_backward_pass when it is an INT.
std::optional<int64_t> recomputeType(const ir::Node& n);
// The attributes Builder::checkpointOutput sets on its Identity
// (willow/src/builder_impl.cpp:1472-1477): __recompute_output_in_backward_pass
// = Checkpoint, and __exclude_patterns = ["PreUniRepl", "PostNRepl"], the
// patterns that would otherwise remove the Identity.
std::vector<onnx::AttributeProto> checkpointAttributes();

// The type PopART reads a `__` attribute as, if graphrw knows the attribute.
std::optional<onnx::AttributeProto_AttributeType> expectedType(const std::string& name);
// The list type PopART also accepts for the attribute on `opType` (Conv's
// per-conv `__partials_type` STRINGS, ...), if any.
std::optional<onnx::AttributeProto_AttributeType> listFormType(const std::string& name, const std::string& opType);
// Problems with one attribute (wrong type, value out of range, unknown pattern
// name), empty when fine. `opType` admits the attribute's list form.
std::vector<std::string> checkAttribute(const onnx::AttributeProto& attribute, const std::string& opType = "");
// Problems with a node's `__` attributes: each one's own, attributes that need
// another (`__serialize_matmul_*`, `__inplace_op_*`), attributes PopART sets itself.
std::vector<std::string> checkNodeAttributes(const ir::Node& n);

// Placement: __ipu_number, __pipeline_stage, __execution_phase. An op graphrw
// inserts (a checkpoint Identity, a Call, replacement and template ops, an
// adapter's ops) takes the placement of the op it replaces or follows, as
// PopART's Builder gives new ops the current scope's attributes.
extern const char* const kPlacementAttributes[3];
constexpr const char* kIpuNumber = "__ipu_number";
constexpr const char* kPipelineStage = "__pipeline_stage";
// The node's placement attribute `key` when it is an INT.
std::optional<int64_t> placementValue(const ir::Node& n, const char* key);
// The main-graph node `n` runs under: n itself, or the node whose subgraph
// (If/Loop body, Call callee) holds it, at any depth; nullptr in a function body.
const ir::Node* mainGraphNode(const ir::Node* n);
// ai.graphcore::Call, whose `callee` GRAPH attribute is the graph it runs.
constexpr const char* kGraphcoreDomain = "ai.graphcore";
constexpr const char* kCallOp = "Call";
constexpr const char* kCalleeAttribute = "callee";
bool isCall(const ir::Node& n);
// Whether a tensor type is floating point (FLOAT, FLOAT16, BFLOAT16, DOUBLE):
// the Variables a training session can update (willow/src/ir.cpp:3080-3083).
bool isFloatingPoint(int32_t dataType);
// For each placement attribute some node of `g` has: the nodes lacking it take
// their producers' (the latest pipeline stage among them), else their first
// consumer's; nodes PopART folds at import and nodes computing only from
// constants are left alone. Returns how many nodes got an attribute.
size_t fillPlacement(ir::Rewriter& rw, ir::Graph& g);

// PopART's op factories, ONNX-level rewrites and import-time folding
// (schemas/popart-ops.json, generated from PopART's sources).
struct ImportSupport {
  bool supported = false;
  std::string reason;  // when not supported
};
// Whether PopART imports `opType` of `domain` ("" or "ai.onnx", "ai.graphcore")
// in a model importing `opset` of that domain; `sinceVersion` is the version of
// the op's ONNX schema that opset selects (0 when ONNX has no such op).
ImportSupport importSupport(const std::string& domain, const std::string& opType, int opset, int sinceVersion);
// Whether PopART imports the op at some version (a factory, a rewrite, folding).
bool hasOp(const std::string& domain, const std::string& opType);
// Ops PopART evaluates at import (Constant, Shape, ConstantOfShape).
bool foldedAtImport(const std::string& opType);
// Whether `name` is a PopART pattern name (values of `__exclude_patterns`).
bool isPatternName(const std::string& name);
// Whether PopART reads the value of input `input` of `n` when it creates the
// op (its shape depends on it: Reshape's shape, Slice's starts, ...). A callee
// is built once, at its first Call, with that call's values.
bool shapeLikeOperand(const ir::Node& n, size_t input);

}  // namespace graphrw::popart
