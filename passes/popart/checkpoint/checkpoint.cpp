#include "passes/popart/checkpoint/checkpoint.h"

#include <spdlog/spdlog.h>

#include <unordered_set>

#include "analysis/attributes.h"
#include "analysis/extensions.h"
#include "pass/blocks.h"
#include "support/error.h"
#include "target/popart/popart.h"

namespace graphrw::passes {
namespace {

using namespace ir;

using popart::isCheckpoint;
constexpr const char* kRecompute = popart::kRecomputeAttribute;

// One run over one model: the pass's per-run state.
class CheckpointRun {
 public:
  CheckpointRun(const CheckpointOptions& options, Rewriter& rw) : options_(options), rw_(&rw) {}

  void run(Model& model, PassContext& context) {
    // PopART refuses user Recompute marks in a pipelined model
    // (willow/src/transforms/pipeline.cpp:1344, Graph::hasUserRecomputeOps).
    if (options_.mode == CheckpointOptions::Mode::Recompute)
      for (const auto& n : model.graph().nodes())
        if (const Attribute* a = n->attribute(popart::kPipelineStage))
          usageError("checkpoint --mode recompute: the model is placed in pipeline stages (" + nodeLabel(*n) + " has " +
                     a->name() +
                     "); PopART refuses user recomputation marks when pipelining "
                     "(transforms/pipeline.cpp:1344): use --mode checkpoint");
    model.walkGraphs([&](Graph& g) { graphs_.push_back(&g); });
    // Blocks are found before any edit: a checkpoint added in one graph is not a match in another.
    std::vector<std::pair<Graph*, std::vector<Block>>> work;
    for (Graph* g : graphs_) {
      auto blocks = findBlocks(*g, options_.after, &hits_);
      // PopART lowers a Call's callee without reading recompute types: marks
      // there would only look right. The Call, in the calling graph, is what
      // to select (outline names it after its block).
      const Node* call = g->parentNode();
      if (call && popart::isCall(*call)) {
        if (!blocks.empty() && warnedCallees_.insert(g->residual().name()).second)
          spdlog::warn(
              "checkpoint: {} block(s) inside the callee '{}' left alone: PopART ignores recomputation "
              "marks in callees; select the Call ({}) instead",
              blocks.size(), g->residual().name(), nodeLabel(*call));
        if (!blocks.empty())
          context.details["blocks_in_callees_skipped"] =
              context.details.value("blocks_in_callees_skipped", 0) + blocks.size();
        continue;
      }
      matched_ += blocks.size();
      std::vector<Block> kept;
      for (size_t i = 0; i < blocks.size(); ++i)
        if ((i + 1) % options_.every == 0) kept.push_back(std::move(blocks[i]));
      if (!kept.empty()) work.emplace_back(g, std::move(kept));
    }
    requireMatches("checkpoint", options_.after, hits_, options_.allowNoMatch);
    for (auto& [g, blocks] : work)
      for (const Block& b : blocks) {
        selected_++;
        if (options_.mode == CheckpointOptions::Mode::Recompute)
          markRecompute(b);
        else
          checkpointBlock(*g, b);
      }
    context.matched = matched_;
    context.details["blocks_matched"] = matched_;
    context.details["blocks_selected"] = selected_;
    if (options_.mode == CheckpointOptions::Mode::Checkpoint) {
      context.details["checkpoints_added"] = added_;
      context.details["already_checkpointed"] = already_;
    } else {
      context.details["nodes_marked_recompute"] = marked_;
    }
  }

 private:
  void markRecompute(const Block& b) {
    for (Node* n : b.nodes) {
      if (isCheckpoint(*n)) continue;  // a checkpoint stays one
      auto current = popart::recomputeType(*n);
      if (current == popart::kRecompute) continue;
      if (current == popart::kCheckpoint) {
        spdlog::warn("checkpoint: node '{}' is marked Checkpoint; left as it is", n->name());
        continue;
      }
      rw_->setAttribute(n, intAttribute(kRecompute, popart::kRecompute));
      marked_++;
    }
  }

  void checkpointBlock(Graph& g, const Block& b) {
    std::unordered_set<const Node*> members(b.nodes.begin(), b.nodes.end());
    for (Value* v : b.outputs) {
      if (isCheckpoint(*v->producer())) continue;  // the block ends in a checkpoint already
      Node* existing = nullptr;
      for (const Use& u : v->uses())
        if (u.node->graph() == &g && isCheckpoint(*u.node)) existing = u.node;
      std::vector<Use> outside;
      for (const Use& u : v->uses())
        if (u.node != existing && !members.count(ownerIn(g, u.node))) outside.push_back(u);
      if (existing) {
        already_++;
        for (const Use& u : outside) rw_->setInput(u.node, static_cast<size_t>(u.index), existing->output(0));
        continue;
      }
      checkpointValue(g, v, outside);
    }
  }

  void checkpointValue(Graph& g, Value* v, const std::vector<Use>& outside) {
    Node* producer = v->producer();
    auto next = std::next(g.position(producer));
    const Node* before = next == g.nodes().end() ? nullptr : next->get();
    // A graph output keeps its name: the value feeding the checkpoint is renamed instead.
    std::string outName = v->name() + "/checkpoint";
    if (v->graphOutputCount() > 0) {
      outName = v->name();
      rw_->renameValue(v, v->name() + "/before_checkpoint");
    }
    std::string base = (producer->name().empty() ? v->name() : producer->name()) + "/Checkpoint";
    Node* id = rw_->createNode(g, before, {base, "Identity", "", {v}, {outName}});
    for (const auto& a : popart::checkpointAttributes()) rw_->setAttribute(id, a);
    ext::applyPlacement(*rw_, {id}, ext::placementOf(*producer));  // runs where its input is made
    Value* out = id->output(0);
    if (v->type()) rw_->setType(out, *v->type());
    for (const Use& u : outside) rw_->setInput(u.node, static_cast<size_t>(u.index), out);
    for (size_t i = 0; i < g.outputs().size(); ++i)
      if (g.outputs()[i].value == v) rw_->setGraphOutput(g, i, out);
    added_++;
  }

  const CheckpointOptions& options_;
  Rewriter* rw_;
  std::vector<Graph*> graphs_;
  std::set<std::string> hits_;
  std::set<std::string> warnedCallees_;
  size_t matched_ = 0, selected_ = 0, added_ = 0, already_ = 0, marked_ = 0;
};

class CheckpointPass final : public Pass {
 public:
  explicit CheckpointPass(CheckpointOptions options) : options_(std::move(options)) {}
  std::string name() const override { return kCheckpointPass; }
  void run(Model& model, PassContext& context) const override {
    CheckpointRun(options_, context.rewriter).run(model, context);
  }

 private:
  const CheckpointOptions options_;
};

}  // namespace

CheckpointOptions::Mode CheckpointOptions::parseCheckpointMode(const std::string& text) {
  if (text == "checkpoint") return CheckpointOptions::Mode::Checkpoint;
  if (text == "recompute") return CheckpointOptions::Mode::Recompute;
  usageError("checkpoint mode must be 'checkpoint' or 'recompute', not '" + text + "'");
}

CheckpointOptions checkpointOptionsFromJson(const nlohmann::json& given, const RuleContext& rules,
                                            const std::string& pointer) {
  const nlohmann::json j = withDefaults(kCheckpointPass, given);
  CheckpointOptions o;
  auto at = [&](const std::string& p) { return rules.at(p); };
  o.after = SelectorSet::fromJson(j.at("after"), at, pointer + "/after");
  o.every = j.at("every").get<size_t>();
  o.mode = CheckpointOptions::parseCheckpointMode(j.at("mode").get<std::string>());
  o.allowNoMatch = j.at("allow_no_match").get<bool>();
  return o;
}

std::unique_ptr<Pass> createCheckpointPass(CheckpointOptions options) {
  if (options.after.empty()) usageError("checkpoint needs a selector (--after)");
  if (options.every == 0) usageError("checkpoint: --every must be at least 1");
  return std::make_unique<CheckpointPass>(std::move(options));
}

namespace {

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = kCheckpointPass,
    .summary = "Insert PopART recomputation checkpoints after blocks, or mark them Recompute",
    .description =
        "PopART recomputation checkpoints after the outputs of chosen blocks, or Recompute marks on their nodes.",
    .outputTag = "checkpointed",
    .options =
        {
            {.key = "after",
             .flags = "--after",
             .kind = Kind::Selectors,
             .help = "The blocks: nodes, calls of a local function, or scopes (each distinct prefix is one block); "
                     "on the command line key=value,... (repeat for any-of)",
             .schema = {{"$ref", "../rules.schema.json#/$defs/selectors"}},
             .required = true},
            {.key = "every",
             .flags = "--every",
             .kind = Kind::Integer,
             .help = "Keep only the K-th, 2K-th, ... matched block of each graph",
             .schema = {{"type", "integer"}, {"minimum", 1}},
             .defaultValue = 1},
            {.key = "mode",
             .flags = "--mode",
             .kind = Kind::String,
             .help = "checkpoint: an Identity with __recompute_output_in_backward_pass = 1 after each block output; "
                     "recompute: set it to 2 on the blocks' nodes",
             .schema = {{"enum", {"checkpoint", "recompute"}}},
             .defaultValue = "checkpoint"},
            {.key = "allow_no_match",
             .flags = "--allow-no-match",
             .kind = Kind::Flag,
             .help = "A selector matching nothing is a warning, not an error",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
        },
    .examples =
        {
            "graphrw checkpoint model.onnx --after 'scope=/encoder/layer.*' -o model.ckpt.onnx",
            "graphrw checkpoint model.onnx --after op_type=BertLayer --every 2",
            "graphrw checkpoint model.onnx --after 'scope=/encoder/layer.*' --mode recompute",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext& where, const std::string& pointer) {
          return createCheckpointPass(checkpointOptionsFromJson(entry, where, pointer));
        },
}};

}  // namespace

}  // namespace graphrw::passes
