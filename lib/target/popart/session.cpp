#include "target/popart/session.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <unordered_set>

#include "analysis/attributes.h"
#include "target/popart/popart.h"

namespace graphrw::popart {

namespace {

// Refusals of an op's setup, in any session.
void checkOps(const ir::Graph& g, std::vector<Finding>& findings) {
  for (const auto& n : g.nodes()) {
    if (!ir::isDefaultDomain(n->domain())) continue;
    const std::string& op = n->opType();
    const std::string at = ir::nodeLabel(*n);
    if (op == "BatchNormalization" && n->input(0) && n->input(0)->type() &&
        n->input(0)->type()->tensor_type().has_shape() && n->input(0)->type()->tensor_type().shape().dim_size() < 3) {
      // willow/src/op/batchnorm.cpp:52-55: "batch norm requires X to have a rank >= 3".
      findings.push_back(
          {"batchnorm-rank", at,
           "input X has rank " + std::to_string(n->input(0)->type()->tensor_type().shape().dim_size()) +
               "; PopART's BatchNormalization needs rank 3 or more (willow/src/op/batchnorm.cpp:52-55)"});
    } else if (op == "MaxPool" && intAttr(*n, "storage_order", 0) != 0) {
      // willow/src/op/maxpool.cpp:38-40: "storage_order != 0, not supported".
      findings.push_back({"maxpool-storage-order", at,
                          "storage_order " + std::to_string(intAttr(*n, "storage_order", 0)) +
                              "; PopART supports 0 only (willow/src/op/maxpool.cpp:38-40)"});
    } else if (op == "AveragePool" && intAttr(*n, "count_include_pad", 0) != 0) {
      // willow/src/op/averagepool.cpp:45-47: "`count_include_pad` is not supported".
      findings.push_back({"averagepool-count-include-pad", at,
                          "count_include_pad 1; PopART refuses it (willow/src/op/averagepool.cpp:45-47)"});
    }
    for (const ir::Graph* sub : n->subgraphs()) checkOps(*sub, findings);
  }
}

}  // namespace

std::vector<Finding> checkSession(const ir::Model& model, SessionMode mode) {
  std::vector<Finding> findings;
  checkOps(model.graph(), findings);
  // Pipelining needs more than one IPU: "Pipelining requires more than 1 IPU" (willow/src/ir.cpp:580-587).
  std::set<int64_t> stages, ipus;
  for (const auto& n : model.graph().nodes()) {
    if (auto s = placementValue(*n, kPipelineStage)) stages.insert(*s);
    if (auto i = placementValue(*n, kIpuNumber)) ipus.insert(*i);
  }
  // While pipelining, a graph input (a stream tensor) is read on one IPU only: "For pipelining, stream tensors
  // can only be streamed directly onto a single IPU" (willow/src/transforms/pipeline.cpp:1363-1376).
  if (stages.size() > 1)
    for (const auto& in : model.graph().inputs()) {
      const ir::Value* v = in.value;
      if (v->isInitializer()) continue;
      std::set<int64_t> on;
      for (const auto& u : v->uses())
        if (u.node->graph() == &model.graph())
          if (auto i = placementValue(*u.node, kIpuNumber)) on.insert(*i);
      if (on.size() > 1) {
        std::string list;
        for (int64_t i : on) list += (list.empty() ? "" : ", ") + std::to_string(i);
        findings.push_back({"input-ipus", "graph input '" + v->name() + "'",
                            "read on IPUs " + list +
                                " while pipelining; PopART streams a graph input onto one IPU only "
                                "(willow/src/transforms/pipeline.cpp:1363-1376): read it on one IPU and pass it on"});
      }
    }
  if (stages.size() > 1 && ipus.size() <= 1)
    findings.push_back({"pipeline-one-ipu", "model",
                        std::to_string(stages.size()) + " pipeline stages on " +
                            (ipus.empty() ? std::string("no IPU") : "IPU " + std::to_string(*ipus.begin()) + " alone") +
                            "; PopART pipelines over more than one IPU only (willow/src/ir.cpp:580-587)"});
  if (mode.training) {
    // Ops a gradient flows through: those reading, at any depth, a float
    // initializer (a Variable). A Pad there in reflect or edge mode has no grad
    // op: "PopART does not support PadGradOp when mode is not constant"
    // (willow/src/op/pad.cpp:112-121).
    std::unordered_set<const ir::Value*> trained;
    for (const auto& init : model.graph().initializers())
      if (!init.value->isGraphInput() && isFloatingPoint(init.tensor->dataType())) trained.insert(init.value);
    for (const auto& n : model.graph().nodes()) {
      bool reads = false;
      for (const ir::Value* in : n->inputs()) reads |= in && trained.count(in);
      if (!reads) continue;
      for (const ir::Value* out : n->outputs())
        if (out) trained.insert(out);
      std::string padMode = n->attribute("mode") ? n->attribute("mode")->proto().s() : "constant";
      if (ir::isDefaultDomain(n->domain()) && n->opType() == "Pad" && padMode != "constant" && n->input(0) &&
          trained.count(n->input(0)))
        findings.push_back({"pad-mode-training", ir::nodeLabel(*n),
                            "mode '" + padMode +
                                "' on a path a gradient flows through; PopART has no gradient for Pad in a mode other "
                                "than constant (willow/src/op/pad.cpp:112-121)"});
    }
    // A training session makes every ONNX initializer a Variable
    // (willow/src/ir.cpp:2329-2350; only an inference session with
    // constantWeights makes Constants) and grows an update for it, which
    // stops the build on one that is not floating point: "Currently only
    // floating point variable tensors are updatable" (ir.cpp:3080-3083).
    for (const auto& init : model.graph().initializers()) {
      const ir::Value* v = init.value;
      if (v->isGraphInput() || (v->uses().empty() && v->graphOutputCount() == 0)) continue;
      int32_t type = init.tensor->dataType();
      if (isFloatingPoint(type)) continue;
      findings.push_back({"training-integer-variable", "initializer '" + v->name() + "'",
                          "an " + std::string(ir::dataTypeName(type)) +
                              " initializer is a Variable in a PopART training session, which refuses to update "
                              "one that is not floating point (willow/src/ir.cpp:3080-3083); graphrw legalize "
                              "makes it a Constant"});
    }
  }
  return findings;
}

const std::vector<std::string>& sessionFindingClasses() {
  static const std::vector<std::string> classes = {
      "batchnorm-rank",   "maxpool-storage-order", "averagepool-count-include-pad", "input-ipus",
      "pipeline-one-ipu", "pad-mode-training",     "training-integer-variable"};
  return classes;
}

}  // namespace graphrw::popart
