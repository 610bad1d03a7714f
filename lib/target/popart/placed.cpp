// What PopART refuses in placed and pipelined models, and in operands it
// reads as data at import: the rules of popart_placed.h, each with the PopART
// source line it comes from (graphcore/popart, willow/).
#include "target/popart/placed.h"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "target/popart/popart.h"

namespace graphrw::popart {
namespace {

using namespace ir;

// Every node of every graph: the main graph, If/Loop bodies, Call callees.
void forEachNode(const Model& model, const std::function<void(const Node&)>& fn) {
  model.graph().walkGraphs([&](const Graph& g) {
    for (const auto& n : g.nodes()) fn(*n);
  });
}

// Whether the main graph is pipelined: PopART pipelines when the session asks
// and the ops carry __pipeline_stage; a model placed in stages is for that.
bool pipelined(const Model& model) {
  for (const auto& n : model.graph().nodes())
    if (placementValue(*n, kPipelineStage)) return true;
  return false;
}

// A weight (an initializer: a Variable in PopART) read directly by ops on two
// IPUs while pipelining. The pipelining transform refuses to copy a Variable
// between virtual graphs: willow/src/transforms/pipeline.cpp:142 ("Can not
// copy variable tensor {} between virtual graphs when pipelining").
void weightsOnOneIpu(const Model& model, std::vector<Finding>& out) {
  for (const auto& init : model.graph().initializers()) {
    std::map<int64_t, std::pair<const Node*, std::optional<int64_t>>> ipus;  // IPU -> first reader, its stage
    for (const Use& u : init.value->uses()) {
      const Node* reader = mainGraphNode(u.node);
      if (!reader || foldedAtImport(reader->opType())) continue;  // Shape/Size: only its type is read
      if (auto ipu = placementValue(*reader, kIpuNumber))
        ipus.emplace(*ipu, std::make_pair(reader, placementValue(*reader, kPipelineStage)));
    }
    if (ipus.size() < 2) continue;
    std::string list;
    for (const auto& [ipu, reader] : ipus)
      list += (list.empty() ? "" : ", ") + std::string("IPU ") + std::to_string(ipu) + " (" + nodeLabel(*reader.first) +
              (reader.second ? ", stage " + std::to_string(*reader.second) : std::string()) + ")";
    out.push_back({"weight-ipus", "initializer '" + init.value->name() + "'",
                   "is read on " + list +
                       " while pipelining; PopART cannot copy a weight between IPUs when pipelining "
                       "(transforms/pipeline.cpp:142): put the stages reading it on one IPU (place --ipus)"});
  }
}

// Recompute marks (__recompute_output_in_backward_pass = 2) while pipelining:
// willow/src/transforms/pipeline.cpp:1344-1348 refuses a main graph with
// user recomputation (Graph::hasUserRecomputeOps, graph.cpp:615) when
// pipelining is enabled.
void noRecomputeMarksWhenPipelined(const Model& model, std::vector<Finding>& out) {
  std::vector<const Node*> marked;
  for (const auto& n : model.graph().nodes())
    if (recomputeType(*n) == kRecompute) marked.push_back(n.get());
  if (marked.empty()) return;
  out.push_back({"pipeline-recompute", nodeLabel(*marked.front()),
                 std::to_string(marked.size()) + " op" + (marked.size() == 1 ? " is" : "s are") +
                     " marked Recompute (" + kRecomputeAttribute +
                     " = 2) in a pipelined model; PopART refuses user recomputation marks when pipelining "
                     "(transforms/pipeline.cpp:1344): use checkpoints (checkpoint --mode checkpoint), "
                     "PopART recomputes between them"});
}

// Operands PopART reads as data when it creates the op (Reshape's shape,
// Slice's starts, ...: Op::getInTensorData, op.cpp:1246, which evaluates them
// by Tensor::getDataViaGraphTraversal, tensor.cpp:461, from tensors holding
// data): a value computed from a graph input has none. A callee input is what
// its Call passes.
class RuntimeDependence {
 public:
  // The graph input `v` is computed from, if any (its name).
  std::optional<std::string> inputBehind(const Value* v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    memo_[v] = std::nullopt;  // a cycle through a Loop body ends here
    std::optional<std::string> found = compute(v);
    memo_[v] = found;
    return found;
  }

 private:
  std::optional<std::string> compute(const Value* v) {
    if (!v || v->isInitializer()) return std::nullopt;
    if (v->isGraphInput()) {
      const Graph* g = v->graph();
      const Node* owner = g->parentNode();
      if (!owner) return v->name().str();  // the model's input
      if (!isCall(*owner)) return v->name().str();  // a Loop / Scan body's input: a run-time value
      const auto& formals = g->inputs();
      for (size_t i = 0; i < formals.size(); ++i)
        if (formals[i].value == v) return inputBehind(owner->input(i));
      return std::nullopt;
    }
    const Node* p = v->producer();
    if (!p) return std::nullopt;
    if (foldedAtImport(p->opType())) return std::nullopt;  // Constant, Shape, Size, ConstantOfShape: data at import
    for (const Value* in : p->inputs())
      if (auto behind = inputBehind(in)) return behind;
    return std::nullopt;
  }

  std::unordered_map<const Value*, std::optional<std::string>> memo_;
};

void shapeOperandsAreData(const Model& model, std::vector<Finding>& out) {
  RuntimeDependence dependence;
  forEachNode(model, [&](const Node& n) {
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const Value* v = n.input(i);
      if (!v || !shapeLikeOperand(n, i)) continue;
      if (auto behind = dependence.inputBehind(v))
        out.push_back({"shape-operand", nodeLabel(n),
                       "input " + std::to_string(i) + " ('" + v->name() + "') is computed from the graph input '" +
                           *behind +
                           "'; PopART reads it as data when it creates the op (op.cpp:1246) and a graph input has "
                           "none: fix the shapes (set-shapes) and fold"});
    }
  });
}

// Placement is all or none over every graph: Ir::verifyVirtualGraphIds
// (willow/src/ir.cpp:1961-1991) collects the virtual graph ids of the ops of
// all graphs, callees included. Ops of a callee placed in a model whose main
// graph has no placement are refused (the main graph's own mix is the
// "placement" class; a callee's against its Call, "callee-placement").
void placementOverEveryGraph(const Model& model, std::vector<Finding>& out) {
  for (const auto& n : model.graph().nodes())
    if (n->attribute(kIpuNumber)) return;
  forEachNode(model, [&](const Node& n) {
    if (n.graph() == &model.graph() || !n.attribute(kIpuNumber)) return;
    out.push_back({"placement", nodeLabel(n),
                   "has " + std::string(kIpuNumber) +
                       " inside a subgraph while no op of the main graph has one; PopART "
                       "needs it on the ops of every graph or of none (ir.cpp:1971)"});
  });
}

// ai.graphcore::GroupNormalization takes one scale and one bias per channel:
// GroupNormOpx passes them to poplin's group normalisation as [C]
// (willow/src/popx/op/groupnormx.cpp:62).
void groupNormParameters(const Model& model, std::vector<Finding>& out) {
  auto dims = [](const Value* v) -> std::optional<std::vector<int64_t>> {
    if (!v || !v->type() || !v->type()->has_tensor_type() || !v->type()->tensor_type().has_shape()) return std::nullopt;
    std::vector<int64_t> d;
    for (const auto& dim : v->type()->tensor_type().shape().dim())
      d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    return d;
  };
  forEachNode(model, [&](const Node& n) {
    if (n.domain() != "ai.graphcore" || n.opType() != "GroupNormalization") return;
    auto x = dims(n.input(0));
    if (!x || x->size() < 2 || (*x)[1] < 0) return;
    int64_t c = (*x)[1];
    for (size_t i : {1u, 2u}) {
      auto p = dims(n.input(i));
      if (!p || (p->size() == 1 && ((*p)[0] == c || (*p)[0] < 0))) continue;
      std::string shape;
      for (int64_t d : *p) shape += (shape.empty() ? "" : ",") + (d < 0 ? std::string("?") : std::to_string(d));
      out.push_back({"groupnorm-params", nodeLabel(n),
                     std::string(i == 1 ? "scale" : "bias") + " '" + n.input(i)->name() + "' has shape [" + shape +
                         "]; PopART's GroupNormalization takes one value per channel, shape [" + std::to_string(c) +
                         "] (popx/op/groupnormx.cpp:62)"});
    }
  });
}

}  // namespace

void checkPlacedModel(const ir::Model& model, std::vector<Finding>& out) {
  if (pipelined(model)) {
    weightsOnOneIpu(model, out);
    noRecomputeMarksWhenPipelined(model, out);
  }
  shapeOperandsAreData(model, out);
  placementOverEveryGraph(model, out);
  groupNormParameters(model, out);
}

}  // namespace graphrw::popart
