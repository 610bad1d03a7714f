#include "passes/popart/place/place.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "analysis/attributes.h"
#include "fold/fold.h"
#include "io/writer.h"
#include "passes/popart/place/place_stage_map.h"
#include "support/error.h"
#include "target/popart/popart.h"

namespace graphrw::passes {
namespace {

using namespace ir;
using Kind = OptionSpec::Kind;

constexpr const char* kStage = popart::kPipelineStage;

// The values of the main graph `g` that n reads: its inputs, and what the
// nodes of its subgraphs (If branches, Loop bodies) read from g by name. A
// branch runs in its node's stage, so what it reads must be there by then.
std::vector<const Value*> readsOf(const Node& n, const Graph& g) {
  std::vector<const Value*> out;
  for (const Value* v : n.inputs())
    if (v) out.push_back(v);
  for (const Graph* sub : n.subgraphs())
    sub->walkGraphs([&](const Graph& inner) {
      for (const auto& m : inner.nodes())
        for (const Value* v : m->inputs())
          if (v && v->graph() == &g && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    });
  return out;
}
constexpr const char* kIpu = popart::kIpuNumber;

class PlaceRun {
 public:
  PlaceRun(const PlaceOptions& options, Model& model, Rewriter& rw) : options_(options), model_(model), rw_(rw) {}

  void run(PassContext& context) {
    Graph& g = model_.graph();
    if (options_.untie) context.details["untied"] = untie();
    std::vector<Node*> nodes;
    nodes.reserve(g.nodeCount());
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    StageMap stage(nodes);

    const bool staged = options_.autoPlace || !options_.stages.empty();
    if (options_.autoPlace) {
      // Contiguous along the graph order, which is topological: no stage reads from a later one.
      auto placed = autoPlace(model_, *options_.autoPlace);
      for (size_t i = 0; i < nodes.size(); ++i) stage.setAt(i, placed.stageOf.at(i));
      context.details["auto"] = std::move(placed.report);
    } else if (options_.stages.empty()) {
      for (size_t i = 0; i < nodes.size(); ++i) stage.setAt(i, 0);
    } else {
      selectStages(g, nodes, stage);
    }

    std::vector<int64_t> ipus = stageIpus();
    if (options_.pipeline && staged) {
      checkNoRecomputeMarks(nodes);
      checkWeightsOnOneIpu(stage, ipus);
    }

    std::map<int64_t, size_t> perStage, perIpu;
    size_t written = 0;
    rw_.expectChanges(nodes.size());
    for (Node* n : nodes) {
      size_t s = stage.at(n);
      int64_t ipu = ipus[s];
      perStage[static_cast<int64_t>(s)]++;
      perIpu[ipu]++;
      written += place(n, s, ipu);
    }
    if (options_.pipeline && staged) {
      size_t routed = routeInputs(g, stage, ipus, written);
      if (routed) context.details["inputs_routed"] = routed;
    }
    nlohmann::json byStage = nlohmann::json::object(), byIpu = nlohmann::json::object();
    for (const auto& [s, c] : perStage) byStage[std::to_string(s)] = c;
    for (const auto& [i, c] : perIpu) byIpu[std::to_string(i)] = c;
    if (options_.pipeline && staged) context.details["nodes_per_stage"] = byStage;
    context.details["nodes_per_ipu"] = byIpu;
    context.details["attributes_written"] = written;
    if (renamedCallees_) context.details["callees_split_by_placement"] = renamedCallees_;
    context.matched = stage.size();
  }

 private:
  // While pipelining PopART streams a graph input onto one IPU only
  // (willow/src/transforms/pipeline.cpp:1363-1376): an input read on several
  // IPUs is read by one Identity, on the earliest stage reading it, whose
  // output the readers take instead (an activation, which PopART copies
  // between IPUs). Returns how many inputs were routed.
  size_t routeInputs(Graph& g, const StageMap& stage, const std::vector<int64_t>& ipus, size_t& written) {
    size_t routed = 0;
    std::vector<Value*> inputs;
    for (const auto& in : g.inputs())
      if (!in.value->isInitializer()) inputs.push_back(in.value);
    for (Value* v : inputs) {
      std::vector<Use> readers;
      std::set<int64_t> on;
      size_t first = SIZE_MAX;
      for (const Use& u : v->uses())
        if (u.node->graph() == &g) {
          readers.push_back(u);
          size_t s = stage.at(u.node);
          on.insert(ipus[s]);
          first = std::min(first, s);
        }
      if (on.size() < 2) continue;
      Node* id = rw_.createNode(g, g.nodes().front().get(),
                                {v->name().str() + "/stream", "Identity", "", {v}, {v->name().str() + "/stream"}});
      for (const Use& u : readers) rw_.setInput(u.node, static_cast<size_t>(u.index), id->output(0));
      written += place(id, first, ipus[first]);
      ++routed;
    }
    return routed;
  }

  // Stages by selectors: stage i holds what its selectors match, every other node follows its data.
  void selectStages(Graph& g, const std::vector<Node*>& nodes, StageMap& stage) {
    // Stage i holds what its selectors match; a node two stages match is an error.
    std::vector<size_t> matched(options_.stages.size(), 0);
    for (Node* n : nodes)
      for (size_t i = 0; i < options_.stages.size(); ++i) {
        if (!options_.stages[i].matches(*n)) continue;
        auto was = stage.find(n);
        if (!was) stage.set(n, i);
        if (was && *was != i)
          usageError("place: " + nodeLabel(*n) + " is matched by stage " + std::to_string(*was) + " ('" +
                     options_.stages[*was].str() + "') and by stage " + std::to_string(i) + " ('" +
                     options_.stages[i].str() + "')");
        ++matched[i];
      }
    for (size_t i = 0; i < matched.size(); ++i)
      if (!matched[i])
        reportNoMatch("place",
                      "stage " + std::to_string(i) + ": selector '" + options_.stages[i].str() + "' matched no node",
                      options_.allowNoMatch);
    // A matched node may not read from a later stage.
    for (Node* n : nodes) {
      auto at = stage.find(n);
      if (!at) continue;
      for (const Value* v : readsOf(*n, g)) {
        if (!v->producer()) continue;
        auto p = stage.find(v->producer());
        if (p && *p > *at)
          usageError("place: " + nodeLabel(*n) + " in stage " + std::to_string(*at) + " reads '" + v->name() +
                     "' from " + nodeLabel(*v->producer()) + " in the later stage " + std::to_string(*p));
      }
    }
    follow(nodes, stage);
    // What following the data gave must not read backwards either: an
    // unmatched node that follows a late producer but feeds an earlier stage.
    for (Node* n : nodes)
      for (const Value* v : readsOf(*n, g)) {
        if (!v->producer() || v->producer()->graph() != &g) continue;
        size_t from = stage.at(v->producer()), to = stage.at(n);
        if (from > to)
          usageError("place: " + nodeLabel(*n) + " in stage " + std::to_string(to) + " reads '" + v->name() +
                     "' from " + nodeLabel(*v->producer()) + ", which follows its data into the later stage " +
                     std::to_string(from) + "; select it into a stage");
      }
  }

  static bool isParameterCopy(const Node& n) {
    const Value* in = n.input(0);
    return n.opType() == "Identity" && isDefaultDomain(n.domain()) && in && in->isInitializer() &&
           !in->isGraphInput() && n.output(0) && n.output(0)->graphOutputCount() == 0 && !popart::isCheckpoint(n);
  }

  // PyTorch's exporter keeps one initializer for parameters of equal value and
  // writes each other one as an Identity of it named after that parameter
  // (every LayerNorm weight of an untrained model). Each such Identity becomes
  // an initializer of its own under its name, holding a copy of the bytes.
  // Returns {name: the initializer it copies}.
  nlohmann::json untie() {
    Graph& g = model_.graph();
    std::vector<Node*> copies;
    for (const auto& n : g.nodes())
      if (isParameterCopy(*n)) copies.push_back(n.get());
    nlohmann::json untied = nlohmann::json::object();
    for (Node* n : copies) {
      Value* out = n->output(0);
      std::string name = out->name().str(), from = n->input(0)->name().str();
      rw_.renameValue(out, name + "/untied");
      Value* own = rw_.addInitializer(
          g, name, std::make_unique<Tensor>(toTensorProto(readTensor(*n->input(0)->initializer()), name)));
      rw_.replaceAllUsesWith(out, own);
      rw_.eraseNode(n);
      untied[own->name()] = from;
    }
    return untied;
  }

  // The IPU of each stage: as given, else stage i on IPU i.
  std::vector<int64_t> stageIpus() const {
    size_t stages = options_.autoPlace ? options_.autoPlace->stages : std::max<size_t>(options_.stages.size(), 1);
    std::vector<int64_t> ipus = options_.ipus;
    if (ipus.empty())
      for (size_t i = 0; i < stages; ++i) ipus.push_back(static_cast<int64_t>(i));
    if (ipus.size() != stages)
      usageError("place: " + std::to_string(ipus.size()) + " IPUs given for " + std::to_string(stages) + " stage" +
                 (stages == 1 ? "" : "s"));
    // A pipelined session needs more than one IPU (willow/src/ir.cpp:580-587).
    if (stages > 1 && std::all_of(ipus.begin(), ipus.end(), [&](int64_t i) { return i == ipus.front(); }))
      usageError("place: " + std::to_string(stages) + " pipeline stages all on IPU " + std::to_string(ipus.front()) +
                 ": PopART pipelines over more than one IPU only (willow/src/ir.cpp:580-587); give --ipus with at "
                 "least two");
    return ipus;
  }

  // PopART refuses user Recompute marks when pipelining
  // (willow/src/transforms/pipeline.cpp:1344, Graph::hasUserRecomputeOps).
  void checkNoRecomputeMarks(const std::vector<Node*>& nodes) {
    size_t marked = 0;
    const Node* first = nullptr;
    for (const Node* n : nodes)
      if (popart::recomputeType(*n) == popart::kRecompute && marked++ == 0) first = n;
    if (marked)
      usageError("place: " + std::to_string(marked) + " op" + (marked == 1 ? " is" : "s are") +
                 " marked Recompute (e.g. " + nodeLabel(*first) +
                 "); PopART refuses user recomputation marks "
                 "when pipelining (transforms/pipeline.cpp:1344): mark checkpoints instead (checkpoint --mode "
                 "checkpoint), or place with --no-pipeline");
  }

  // PopART cannot copy a weight (a Variable) between IPUs when pipelining
  // (willow/src/transforms/pipeline.cpp:142): every stage reading one weight
  // must be on one IPU. The refusal names the weight, its readers and their
  // stages, and the --ipus that puts each group of stages sharing a weight on
  // the IPU of its first stage (a tied MLM head: its stage on the embedding's IPU).
  void checkWeightsOnOneIpu(const StageMap& stage, const std::vector<int64_t>& ipus) {
    std::vector<size_t> group(ipus.size());  // union of stages sharing a weight, by their lowest stage
    for (size_t i = 0; i < group.size(); ++i) group[i] = i;
    std::function<size_t(size_t)> root = [&](size_t s) { return group[s] == s ? s : group[s] = root(group[s]); };
    std::string first;
    bool throughIdentity = false;
    for (const auto& init : model_.graph().initializers()) {
      std::map<size_t, const Node*> readers;  // stage -> first reader
      for (const Use& u : init.value->uses()) {
        const Node* owner = popart::mainGraphNode(u.node);
        if (!owner || popart::foldedAtImport(owner->opType())) continue;
        if (auto s = stage.find(owner)) readers.emplace(*s, owner);
      }
      std::set<int64_t> on;
      for (const auto& [s, _] : readers) on.insert(ipus[s]);
      if (on.size() < 2) continue;
      for (const auto& [s, _] : readers) {
        size_t a = root(s), b = root(readers.begin()->first);
        group[std::max(a, b)] = std::min(a, b);
      }
      if (!first.empty()) continue;
      first = "weight '" + init.value->name() + "' is read by";
      for (const auto& [s, n] : readers) {
        first += " " + nodeLabel(*n) + " (stage " + std::to_string(s) + ", IPU " + std::to_string(ipus[s]) + ")";
        throughIdentity |= isParameterCopy(*n);
      }
    }
    if (first.empty()) return;
    std::string suggestion;
    for (size_t s = 0; s < ipus.size(); ++s) suggestion += (s ? "," : "") + std::to_string(ipus[root(s)]);
    usageError("place: " + first +
               "; PopART cannot copy a weight between IPUs when pipelining "
               "(transforms/pipeline.cpp:142): put the stages that read it on one IPU, e.g. --ipus " +
               suggestion +
               (throughIdentity ? "; or, where PyTorch merged parameters of equal value (read through Identity nodes "
                                  "named after them), give each its own copy with --untie"
                                : ""));
  }

  // Unmatched nodes follow their data: the latest stage among their producers;
  // nodes with no placed producer (constants, shape computations on graph
  // inputs) take the earliest stage among their consumers; what is left
  // (nothing reads it) goes to stage 0.
  void follow(const std::vector<Node*>& nodes, StageMap& stage) {
    std::vector<Node*> left;
    for (Node* n : nodes) {
      if (stage.find(n)) continue;
      std::optional<size_t> latest;
      for (const Value* v : readsOf(*n, model_.graph()))
        if (v->producer())
          if (auto s = stage.find(v->producer()); s && (!latest || *s > *latest)) latest = s;
      if (latest)
        stage.set(n, *latest);
      else
        left.push_back(n);
    }
    for (auto it = left.rbegin(); it != left.rend(); ++it) {
      Node* n = *it;
      std::optional<size_t> first;
      for (const Value* v : n->outputs()) {
        if (!v) continue;
        for (const Use& u : v->uses()) {
          const Node* owner = popart::mainGraphNode(u.node);
          if (!owner) continue;
          if (auto s = stage.find(owner); s && (!first || *s < *first)) first = s;
        }
      }
      stage.set(n, first.value_or(0));
    }
  }

  // Writes the placement on n and on every node inside its subgraphs; returns attributes changed.
  size_t place(Node* n, size_t stage, int64_t ipu) {
    size_t changed = 0;
    auto set = [&](const char* key, int64_t value) {
      const Attribute* a = n->attribute(key);
      if (a && a->type() == onnx::AttributeProto::INT && a->proto().i() == value) return;
      rw_.setAttribute(n, intAttribute(key, value));
      ++changed;
    };
    set(kIpu, ipu);
    bool stages = options_.pipeline && (options_.autoPlace || !options_.stages.empty());
    if (stages) set(kStage, static_cast<int64_t>(stage));
    if (popart::isCall(*n) && n->attribute("callee") && n->attribute("callee")->g())
      return changed + placeCallee(n, stage, ipu, stages);
    n->forEachSubgraph([&](Graph& sub) {
      std::vector<Node*> inner;
      for (const auto& m : sub.nodes()) inner.push_back(m.get());
      for (Node* m : inner) changed += place(m, stage, ipu);
    });
    return changed;
  }

  // A callee runs where its Call runs, and PopART identifies a callee by its
  // name: Calls sharing one but placed differently get a callee each
  // (`<name>_stage<S>`, or `<name>_ipu<I>` without stages).
  size_t placeCallee(Node* call, size_t stage, int64_t ipu, bool stages) {
    onnx::NodeProto proto = nodeToProto(*call);
    onnx::AttributeProto* callee = nullptr;
    for (auto& a : *proto.mutable_attribute())
      if (a.name() == "callee") callee = &a;
    onnx::GraphProto& body = *callee->mutable_g();
    const std::string base = body.name();
    std::pair<int64_t, int64_t> key{stages ? static_cast<int64_t>(stage) : -1, ipu};
    auto [first, fresh] = calleePlacement_.emplace(base, key);
    std::string name = base;
    if (!fresh && first->second != key) {
      name = base + (stages ? "_stage" + std::to_string(stage) : "_ipu" + std::to_string(ipu));
      for (int k = 2; takenNames_.count(name) && renamed_[name] != key; ++k)
        name = base + (stages ? "_stage" : "_ipu") + std::to_string(stages ? static_cast<int64_t>(stage) : ipu) + "_" +
               std::to_string(k);
      renamed_[name] = key;
    }
    takenNames_.insert(name);
    size_t changed = 0;
    std::function<void(onnx::GraphProto&)> mark = [&](onnx::GraphProto& g) {
      for (auto& node : *g.mutable_node()) {
        for (auto [k, v] : {std::pair<const char*, int64_t>{kIpu, ipu}, {kStage, static_cast<int64_t>(stage)}}) {
          if (k == std::string(kStage) && !stages) continue;
          onnx::AttributeProto* a = nullptr;
          for (auto& x : *node.mutable_attribute())
            if (x.name() == k) a = &x;
          if (a && a->type() == onnx::AttributeProto::INT && a->i() == v) continue;
          if (!a) a = node.add_attribute();
          *a = intAttribute(k, v);
          ++changed;
        }
        for (auto& a : *node.mutable_attribute()) {
          if (a.has_g()) mark(*a.mutable_g());
          for (auto& sub : *a.mutable_graphs()) mark(sub);
        }
      }
    };
    mark(body);
    if (name != base) {
      body.set_name(name);
      ++renamedCallees_;
    }
    if (changed || name != base) rw_.setAttribute(call, *callee);
    return changed;
  }

  const PlaceOptions& options_;
  Model& model_;
  Rewriter& rw_;
  size_t renamedCallees_ = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> calleePlacement_;  // callee name -> (stage, ipu) of its first Call
  std::map<std::string, std::pair<int64_t, int64_t>> renamed_;
  std::set<std::string> takenNames_;
};

class PlacePass final : public Pass {
 public:
  explicit PlacePass(PlaceOptions options) : options_(std::move(options)) {}
  std::string name() const override { return kPlacePass; }
  void run(Model& model, PassContext& context) const override {
    PlaceRun(options_, model, context.rewriter).run(context);
  }

 private:
  const PlaceOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createPlacePass(PlaceOptions options) { return std::make_unique<PlacePass>(std::move(options)); }

}  // namespace graphrw::passes
