// replace's internals, shared by its files: replace.cpp (the pass, its run,
// templates), replace_plan.cpp (checking and planning an op replacement) and
// replace_options.cpp (options from JSON). Not for other passes.
#pragma once

#include <map>
#include <set>
#include <unordered_set>

#include "fold/weights.h"
#include "passes/replace/replace.h"

namespace graphrw::passes::replace_detail {

using namespace ir;

std::string displayOp(const std::string& domain, const std::string& op);

// What an op replacement will do to one node, decided (and checked) before any edit.
struct OpPlan {
  Node* node;
  std::string domain, opType;
  int64_t version;
  bool importDomain;
  std::vector<ReplaceInput> inputs;
  std::vector<int> outputs;
  std::vector<std::string> freshOutputs;  // names for outputs the target needs and the node has not
  std::vector<std::string> drop;  // attribute names removed
  std::vector<std::pair<std::string, std::string>> renames;
  std::vector<onnx::AttributeProto> sets;  // attributes written (converted or set)
};

// The target op as seen from one scope, worked out once per (replacement, graph).
struct Resolved {
  std::string domain;
  int64_t version = 0;
  bool importDomain = false;
  const onnx::OpSchema* schema = nullptr;
  const Function* function = nullptr;
};

// One run of the pass over one model: its per-run state.
class ReplaceRun {
 public:
  ReplaceRun(const ReplaceOptions& options, Model& model, Rewriter& rw)
      : options_(options), model_(&model), rw_(&rw), weights_(rw) {
    weights_.setKeepParameters(options.keepParameters);
  }
  void run(Model& model, PassContext& context);

 private:
  std::vector<Node*> collect(const Replacement& r);
  // replace_plan.cpp
  OpPlan plan(const Replacement& r, Node& n);
  const Resolved& resolve(const Replacement& r, Graph& g, const std::string& where);
  void apply(OpPlan& p);
  // Nodes whose outputs an edit left unread are removed, and those they read that it leaves unread in turn.
  void noteInputs(const Node& n);
  size_t removeDead();
  const Function& templateFunction(const Replacement& r);
  void checkTemplate(const Replacement& r, const Function& fn, Node& n);
  void applyTemplate(const Function& fn, Node* n);

  const ReplaceOptions& options_;
  Model* model_;
  Rewriter* rw_;
  WeightFolder weights_;
  size_t matched_ = 0;
  std::map<const Replacement*, std::unique_ptr<Function>> templates_;
  std::map<std::pair<const Replacement*, const Graph*>, Resolved> resolved_;
  std::vector<Node*> fromTemplates_;
  std::unordered_set<Node*> erasedByTemplates_;
  std::vector<Node*> maybeDead_;  // producers of inputs replaced nodes read
};

}  // namespace graphrw::passes::replace_detail
