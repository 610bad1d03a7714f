#include "passes/popart/outline/outline.h"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analysis/opsets.h"
#include "analysis/types.h"
#include "fold/weights.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/inliner.h"
#include "pass/blocks.h"
#include "passes/popart/outline/outline_sharing.h"
#include "support/error.h"
#include "support/stopwatch.h"
#include "target/popart/popart.h"

namespace graphrw::passes {
namespace {

using namespace ir;
constexpr const char* kOutline = "__outline";

struct Group {
  std::string callee;
  std::vector<size_t> blocks;  // indices into work_
  onnx::GraphProto body;  // call mode
  size_t bodyNodes = 0;
  std::vector<size_t> slotParam;  // each read slot's callee parameter
  std::vector<size_t> paramSlot;  // each parameter's first slot
};

struct Work {
  Graph* graph;
  Block block;
  bool scoped;
  size_t group = 0;
  std::map<std::string, int64_t> placement;  // placement attributes its nodes carry
  outline_sharing::Reads reads;  // what it reads from outside, per use
};

// One run over one model: the pass's per-run state.
class OutlineRun {
 public:
  OutlineRun(const OutlineOptions& options, Model& model, Rewriter& rw) : options_(options), model_(&model), rw_(&rw) {}

  void run(Model& model, PassContext& context) {
    auto before = ModelUsage::of(model);
    size_t mainBefore = model.graph().nodeCount();
    collect(model, context);
    clock_.lap("blocks");
    if (options_.mode == OutlineOptions::Mode::Attributes) {
      size_t marked = 0;
      for (auto& w : work_)
        for (Node* n : w.block.nodes) marked += annotate(n);
      context.details["nodes_annotated"] = marked;
      return;
    }
    // Input types decide which blocks share a body, which declares its input and
    // output types: ONNX's inference gives those the model lacks (only these stay).
    std::vector<Value*> boundary;
    for (const auto& w : work_)
      for (const auto* vs : {&w.block.inputs, &w.block.outputs})
        boundary.insert(boundary.end(), vs->begin(), vs->end());
    inferMissingTypes(*rw_, boundary);
    clock_.lap("types");
    size_t alreadyFunctions = 0;
    std::vector<size_t> kept = prepare(model, alreadyFunctions);
    clock_.lap("checks");
    groupBlocks(kept);
    size_t aliased = assignParameters();
    if (aliased) context.details["aliased_reads"] = aliased;
    clock_.lap("grouping");
    size_t saved = outlineAll(kept);
    auto removed = pruneUnused(*rw_, before);
    clock_.lap("prune");

    nlohmann::json callees = nlohmann::json::object();
    for (const auto& group : groups_)
      callees[group.callee] = {{"blocks", group.blocks.size()}, {"body_nodes", group.bodyNodes}};
    context.details["distinct_bodies"] = groups_.size();
    context.details["callees"] = callees;
    context.details["nodes_saved"] = saved;
    context.details["main_graph_nodes"] = {{"before", mainBefore}, {"after", model.graph().nodeCount()}};
    if (alreadyFunctions) context.details["already_functions"] = alreadyFunctions;
    context.details["functions_removed"] = removed;
  }

 private:
  // The blocks of every graph (weights' Identity aliases read through, shared
  // mask computations hoisted, checkpoints left outside) into work_.
  void collect(Model& model, PassContext& context) {
    std::vector<Graph*> graphs;
    model.walkGraphs([&](Graph& g) { graphs.push_back(&g); });
    bool sharing = options_.mode != OutlineOptions::Mode::Attributes;
    if (sharing) {
      size_t forwarded = 0;
      for (Graph* g : graphs) forwarded += forwardWeightIdentities(*rw_, *g);
      if (forwarded) context.details["weight_identities_removed"] = forwarded;
    }
    std::set<std::string> hits;
    size_t detached = 0;
    for (Graph* g : graphs) {
      auto blocks = findBlocks(*g, options_.select, &hits);
      if (blocks.empty()) continue;
      checkConvex(*g, blocks, "outline");
      if (sharing) {
        for (auto& b : blocks) detached += outline_sharing::detachCheckpoints(*g, b);
        hoisted_ += outline_sharing::hoistShared(*g, blocks);
      }
      if (work_.empty()) work_.reserve(blocks.size());  // the 50,000 blocks of 1M nodes: not doubled into
      for (auto& b : blocks) {
        if (b.nodes.empty()) continue;
        bool scoped = b.nodes.size() > 1 || (b.nodes.size() == 1 && b.key != b.nodes[0]->name());
        work_.push_back({g, std::move(b), scoped, 0, {}, {}});
      }
    }
    requireMatches("outline", options_.select, hits, options_.allowNoMatch);
    if (detached) context.details["checkpoints_kept_outside"] = detached;
    if (hoisted_) context.details["nodes_hoisted"] = hoisted_;
    context.matched = work_.size();
    context.details["blocks"] = work_.size();
  }

  // The blocks to outline: a call of a local function is inlined first (its
  // body is the block), or left alone in function mode. Each is checked.
  std::vector<size_t> prepare(Model& model, size_t& alreadyFunctions) {
    std::vector<size_t> kept;
    for (size_t i = 0; i < work_.size(); ++i) {
      Work& w = work_[i];
      Node* only = w.block.nodes.size() == 1 ? w.block.nodes[0] : nullptr;
      Function* called = only ? model.findFunction(only->domain(), only->opType(), only->overload()) : nullptr;
      if (called && options_.mode == OutlineOptions::Mode::Function) {
        alreadyFunctions++;  // a call of a local function is outlined already
        continue;
      }
      if (called) {
        // The function body is the block: inline it where it stands, outline what came in.
        std::string prefix = only->name().empty() ? rw_->reserveNodeName(*w.graph, only->opType()) : only->name().str();
        w.block.key = prefix;
        auto result = inlineBody(*rw_, only, called->body(), AttributeEnv::of(*only), prefix);
        w.block.nodes = result.created;
        fillBoundary(*w.graph, w.block);
        w.scoped = true;
      }
      checkBlock(w);
      kept.push_back(i);
    }
    return kept;
  }

  // Each group's body built, each block replaced by its call. Returns the nodes saved.
  size_t outlineAll(const std::vector<size_t>& kept) {
    for (auto& group : groups_) build(group);
    std::set<Graph*> touched;
    size_t saved = 0;
    for (size_t i : kept) {
      saved += work_[i].block.nodes.size() - 1;
      emit(work_[i]);
      touched.insert(work_[i].graph);
      work_[i] = {work_[i].graph, {}, work_[i].scoped, work_[i].group, {}, {}};  // nodes gone: free the lists
    }
    clock_.lap("calls");
    for (Graph* g : touched) rw_->sortTopologically(*g);
    clock_.lap("sort");
    return saved;
  }

  // __outline = [k0, v0, k1, v1, ...]: the given keys set, others kept, in order.
  size_t annotate(Node* n) {
    std::vector<std::pair<std::string, std::string>> pairs;
    if (const Attribute* a = n->attribute(kOutline); a && a->type() == onnx::AttributeProto::STRINGS)
      for (int i = 0; i + 1 < a->proto().strings_size(); i += 2)
        pairs.emplace_back(a->proto().strings(i), a->proto().strings(i + 1));
    auto next = pairs;
    for (const auto& key : options_.keys) {
      auto it = std::find_if(next.begin(), next.end(), [&](const auto& p) { return p.first == key.first; });
      if (it != next.end())
        it->second = key.second;
      else
        next.push_back(key);
    }
    const Attribute* existing = n->attribute(kOutline);
    if (next == pairs && existing && existing->type() == onnx::AttributeProto::STRINGS) return 0;
    onnx::AttributeProto a;
    a.set_name(kOutline);
    a.set_type(onnx::AttributeProto::STRINGS);
    for (const auto& [k, v] : next) {
      a.add_strings(k);
      a.add_strings(v);
    }
    rw_->setAttribute(n, a);
    return 1;
  }

  void checkBlock(Work& w) {
    std::map<std::string, const Node*> firstWith;
    for (Node* n : w.block.nodes) {
      for (const auto& a : n->attributes())
        if (a.isRef())
          badInput("outline: block '" + w.block.key + "': node '" + n->name() + "' refers to attribute '" +
                   a.proto().ref_attr_name() + "' of its function; outline the function's calls instead");
      // Where an op runs: the Call and its callee's ops take the block's (part of its signature).
      for (const char* key : popart::kPlacementAttributes) {
        const Attribute* a = n->attribute(key);
        if (!a || a->type() != onnx::AttributeProto::INT) continue;
        auto [it, fresh] = w.placement.emplace(key, a->proto().i());
        if (fresh) {
          firstWith[key] = n;
        } else if (it->second != a->proto().i()) {
          badInput("outline: block '" + w.block.key + "' spans " + key + " values: node '" + firstWith[key]->name() +
                   "' has " + std::to_string(it->second) + ", node '" + n->name() + "' has " +
                   std::to_string(a->proto().i()));
        }
      }
    }
    if (w.block.outputs.empty()) badInput("outline: block '" + w.block.key + "' has no output anything reads");
  }

  void groupBlocks(const std::vector<size_t>& kept) {
    std::unordered_map<std::string, size_t> bySignature;  // groups_ keeps first-seen order: deterministic
    bySignature.reserve(kept.size());
    for (size_t i : kept) {
      work_[i].reads = outline_sharing::readsOf(*work_[i].graph, work_[i].block);
      std::string sig = outline_sharing::signature(work_[i].block, work_[i].reads);
      // A block with an input of unknown type (inside a function body, where
      // ONNX infers nothing) shares with nothing: its sizes cannot be compared.
      // Unknown or symbolic dimensions of a known type do share.
      for (Value* v : work_[i].reads.slots)
        if (!v->type() || (v->type()->has_tensor_type() && !v->type()->tensor_type().elem_type())) {
          sig += "#unknown-type-" + std::to_string(i);
          break;
        }
      // Blocks whose inputs have different shapes do not share: PopART would
      // build the body for the first call's shapes only. Ranks and dimensions
      // are compared where both blocks know them (ONNX's inference often
      // leaves the first layer's input typed and the others not).
      auto profile = outline_sharing::shapeProfile(work_[i].reads.slots);
      size_t index;
      auto it = bySignature.find(sig);
      if (it == bySignature.end()) {
        index = groups_.size();
        bySignature.emplace(sig, index);
        groups_.push_back({"", {}, {}, work_[i].block.nodes.size(), {}, {}});
        profiles_.push_back(profile);
        nextWithSignature_.push_back(SIZE_MAX);
      } else {
        // Follow the chain of groups with this signature to one whose shapes agree.
        index = it->second;
        while (!outline_sharing::compatible(profiles_[index], profile)) {
          if (nextWithSignature_[index] == SIZE_MAX) {
            nextWithSignature_[index] = groups_.size();
            groups_.push_back({"", {}, {}, work_[i].block.nodes.size(), {}, {}});
            profiles_.push_back(profile);
            nextWithSignature_.push_back(SIZE_MAX);
          }
          index = nextWithSignature_[index];
        }
        outline_sharing::merge(profiles_[index], profile);
      }
      groups_[index].blocks.push_back(i);
      work_[i].group = index;
    }
    // Names: the blocks' keys with the parts in which they differ left out
    // ("/encoder/layer.0", "/encoder/layer.1" -> "encoder_layer"), unique.
    std::set<std::string> names;
    for (const auto& f : model_->functions()) names.insert(f->key().name);
    for (auto& group : groups_) {
      std::vector<std::string> keys;
      for (size_t i : group.blocks) keys.push_back(work_[i].block.key);
      group.callee = outline_sharing::calleeName(keys, names);
    }
  }

  // Each group's callee parameters: one per slot class that every block of
  // the group fills with one value. Returns how many reads share a parameter
  // with an earlier read in some block but not in all (aliasing that differs).
  size_t assignParameters() {
    size_t aliased = 0;
    for (auto& group : groups_) {
      std::vector<const outline_sharing::Reads*> reads;
      for (size_t i : group.blocks) reads.push_back(&work_[i].reads);
      group.slotParam = outline_sharing::parameterOf(reads);
      size_t params = 0;
      for (size_t s = 0; s < group.slotParam.size(); ++s)
        if (group.slotParam[s] == params) {
          group.paramSlot.push_back(s);
          ++params;
        }
      for (size_t i : group.blocks) {
        std::unordered_set<const Value*> distinct;
        for (size_t p : group.paramSlot) distinct.insert(work_[i].reads.slots[p]);
        aliased += group.paramSlot.size() - distinct.size();
      }
    }
    return aliased;
  }

  // The values a block passes to its callee, one per parameter.
  std::vector<Value*> arguments(const Work& w) const {
    std::vector<Value*> args;
    for (size_t s : groups_[w.group].paramSlot) args.push_back(w.reads.slots[s]);
    return args;
  }

  // The body of a group, from its first block: inputs, nodes, outputs under
  // names relative to the block (`<callee>/<name within the block>`).
  void build(Group& group) {
    const Work& w = work_[group.blocks.front()];
    const Block& b = w.block;
    std::set<std::string> used;
    auto unique = [&](std::string name) {
      std::string base = name;
      for (int k = 1;
           used.count(name) || (options_.mode == OutlineOptions::Mode::Call && w.graph->names().contains(name)); ++k)
        name = base + "_" + std::to_string(k);
      used.insert(name);
      return name;
    };
    auto relative = [&](std::string_view name) {
      std::string rel(name);
      if (w.scoped && rel.starts_with(b.key)) rel = rel.substr(b.key.size());
      while (!rel.empty() && rel.front() == '/') rel.erase(rel.begin());
      return group.callee + "/" + (rel.empty() ? std::string("value") : rel);
    };
    std::unordered_map<std::string, std::string> rename;  // old value name -> body name
    std::vector<std::string> inNames, outNames;
    for (size_t i = 0; i < group.paramSlot.size(); ++i)
      inNames.push_back(unique(group.callee + "/input_" + std::to_string(i)));
    // Subgraphs read outer values by name; the block's own inputs are renamed per slot below.
    for (const auto& [v, slot] : w.reads.implicit) rename[v->name().str()] = inNames[group.slotParam[slot]];
    std::unordered_set<const Value*> isOutput(b.outputs.begin(), b.outputs.end());
    std::unordered_map<const Value*, size_t> outIndex;
    for (size_t j = 0; j < b.outputs.size(); ++j) outIndex[b.outputs[j]] = j;
    outNames.resize(b.outputs.size());
    for (Node* n : b.nodes)
      for (Value* v : n->outputs()) {
        if (!v) continue;
        std::string name = isOutput.count(v) ? unique(group.callee + "/output_" + std::to_string(outIndex[v]))
                                             : unique(relative(v->name()));
        rename[v->name().str()] = name;
        if (isOutput.count(v)) outNames[outIndex[v]] = name;
      }
    std::vector<onnx::NodeProto> nodes;
    std::set<std::string> nodeNames;
    for (size_t k = 0; k < b.nodes.size(); ++k) {
      Node* n = b.nodes[k];
      onnx::NodeProto p = nodeToProto(*n);
      outline_sharing::renameRefs(p, rename);
      const auto slots = w.reads.direct[k];
      if (static_cast<size_t>(p.input_size()) != slots.size())
        fail(ExitCode::Internal, "outline: node '" + n->name() + "' has " + std::to_string(p.input_size()) +
                                     " inputs written, " + std::to_string(slots.size()) + " read");
      for (size_t j = 0; j < slots.size(); ++j)
        if (slots[j] >= 0) p.set_input(static_cast<int>(j), inNames[group.slotParam[static_cast<size_t>(slots[j])]]);
      for (const auto& [key, value] : w.placement) {
        bool has = false;
        for (const auto& a : p.attribute()) has |= a.name() == key;
        if (has) continue;
        auto* a = p.add_attribute();
        a->set_name(key);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(value);
      }
      std::string nodeName = relative(n->name().empty() ? std::string_view(n->opType()) : n->name().view());
      for (int dup = 1; nodeNames.count(nodeName); ++dup)
        nodeName =
            relative(n->name().empty() ? std::string_view(n->opType()) : n->name().view()) + "_" + std::to_string(dup);
      nodeNames.insert(nodeName);
      p.set_name(nodeName);
      nodes.push_back(std::move(p));
    }
    if (options_.mode == OutlineOptions::Mode::Call)
      writeCallBody(group, inNames, outNames, std::move(nodes));
    else
      addFunction(group, *w.graph, inNames, outNames, std::move(nodes));
  }

  // Call mode: the group's callee, declaring what is true at every call site.
  void writeCallBody(Group& group, const std::vector<std::string>& inNames, const std::vector<std::string>& outNames,
                     std::vector<onnx::NodeProto> nodes) {
    const Block& b = work_[group.blocks.front()].block;
    onnx::GraphProto& g = group.body;
    g.set_name(group.callee);
    auto common = [&](bool input, size_t k) {
      std::vector<const Value*> values;
      for (size_t i : group.blocks)
        values.push_back(input ? work_[i].reads.slots[group.paramSlot[k]] : work_[i].block.outputs[k]);
      return outline_sharing::commonType(values);
    };
    for (size_t i = 0; i < inNames.size(); ++i) {
      auto* vi = g.add_input();
      vi->set_name(inNames[i]);
      if (auto t = common(true, i)) *vi->mutable_type() = *t;
    }
    for (auto& n : nodes) *g.add_node() = std::move(n);
    for (size_t j = 0; j < b.outputs.size(); ++j) {
      auto* vi = g.add_output();
      vi->set_name(outNames[j]);
      if (auto t = common(false, j)) *vi->mutable_type() = *t;
    }
  }

  // Function mode: a model-local function in the options' domain, importing what its nodes use.
  void addFunction(const Group& group, const Graph& graph, const std::vector<std::string>& inNames,
                   const std::vector<std::string>& outNames, std::vector<onnx::NodeProto> nodes) {
    onnx::FunctionProto fp;
    fp.set_name(group.callee);
    fp.set_domain(options_.domain);
    for (const auto& n : inNames) fp.add_input(n);
    for (const auto& n : outNames) fp.add_output(n);
    std::set<std::string> domains;
    for (auto& n : nodes) {
      domains.insert(n.domain());
      *fp.add_node() = std::move(n);
    }
    auto scope = scopeOpsets(*model_, graph);
    for (const auto& d : domains)
      if (auto it = scope.find(d); it != scope.end()) {
        auto* op = fp.add_opset_import();
        op->set_domain(d);
        op->set_version(it->second);
      }
    rw_->addFunction(buildFunction(*model_, std::move(fp)));
  }

  void emit(Work& w) {
    Graph& g = *w.graph;
    Group& group = groups_[w.group];
    Block& b = w.block;
    auto next = std::next(g.position(b.nodes.back()));
    const Node* before = next == g.nodes().end() ? nullptr : next->get();
    std::vector<std::string> outs(b.outputs.size());
    std::vector<Value*> args = arguments(w);
    Node* call = options_.mode == OutlineOptions::Mode::Call
                     ? rw_->createNode(g, before, {"", "Call", "ai.graphcore", args, outs})
                     : rw_->createNode(g, before, {"", group.callee, options_.domain, args, outs});
    for (size_t j = 0; j < b.outputs.size(); ++j) rw_->adoptOutput(call, j, b.outputs[j]);
    for (auto it = b.nodes.rbegin(); it != b.nodes.rend(); ++it) rw_->eraseNode(*it);
    rw_->renameNode(call, b.key.empty() ? group.callee : b.key);
    if (options_.mode == OutlineOptions::Mode::Call) {
      onnx::AttributeProto callee;
      callee.set_name("callee");
      callee.set_type(onnx::AttributeProto::GRAPH);
      *callee.mutable_g() = group.body;
      rw_->setAttribute(call, std::move(callee));
      onnx::AttributeProto count;  // as PopART's Builder writes every Call
      count.set_name("num_outputs");
      count.set_type(onnx::AttributeProto::INT);
      count.set_i(static_cast<int64_t>(b.outputs.size()));
      rw_->setAttribute(call, count);
      for (const auto& [key, value] : w.placement) {
        onnx::AttributeProto a;
        a.set_name(key);
        a.set_type(onnx::AttributeProto::INT);
        a.set_i(value);
        rw_->setAttribute(call, a);
      }
      if (!scopeOpsets(*model_, g).count("ai.graphcore")) rw_->setOpsetImport(g, "ai.graphcore", 1);
    } else {
      if (!scopeOpsets(*model_, g).count(options_.domain)) rw_->setOpsetImport(g, options_.domain, 1);
      // ONNX Runtime resolves calls inside function bodies with the model's imports too.
      if (!model_->opsetVersion(options_.domain)) rw_->setOpsetImport(model_->graph(), options_.domain, 1);
    }
  }

  const OutlineOptions& options_;
  Model* model_;
  Rewriter* rw_;
  std::vector<Work> work_;
  std::vector<Group> groups_;
  size_t hoisted_ = 0;
  Stopwatch clock_{"outline"};
  std::vector<outline_sharing::ShapeProfile> profiles_;  // per group: what its blocks' reads are known to be
  std::vector<size_t> nextWithSignature_;  // per group: the next group with its signature, or SIZE_MAX
};

class OutlinePass final : public Pass {
 public:
  explicit OutlinePass(OutlineOptions options) : options_(std::move(options)) {}
  std::string name() const override { return kOutlinePass; }
  void run(Model& model, PassContext& context) const override {
    OutlineRun(options_, model, context.rewriter).run(model, context);
  }

 private:
  const OutlineOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createOutlinePass(OutlineOptions options) {
  options.check();
  return std::make_unique<OutlinePass>(std::move(options));
}

}  // namespace graphrw::passes
