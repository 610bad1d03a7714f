#include "passes/fold/fold.h"

#include <spdlog/spdlog.h>

#include <set>

#include "analysis/types.h"
#include "fold/weights.h"
#include "support/error.h"

namespace graphrw::passes {
namespace {

using namespace ir;

// The dimensions of v when its type says they are all known.
std::optional<std::vector<int64_t>> staticDims(const Value* v) {
  if (!v || !v->type() || !v->type()->has_tensor_type() || !v->type()->tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : v->type()->tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

class FoldRun {
 public:
  FoldRun(const FoldOptions& options, Model& model, Rewriter& rw) : options_(options), model_(model), rw_(rw) {}

  void run(PassContext& context) {
    if (options_.shapes) inferMissingTypes(rw_);
    // Inference: a copy of an initializer through Identity is the initializer (not folded into a second one).
    // Nodes it acts on besides those it folds: Identities of weights read through, Constants made initializers.
    size_t otherNodes = options_.keepParameters ? 0 : forwardWeightIdentities(rw_, model_.graph());
    if (!options_.keepParameters) context.details["identities_read_through"] = otherNodes;
    std::map<std::string, size_t> perOp;
    size_t folded = 0, tooLarge = 0, pruned = 0;
    // Each round folds whole chains (nodes are visited in order); a round
    // that folds a Shape can expose more.
    std::set<const Value*> before;  // the initializers the model came with
    for (const auto& init : model_.graph().initializers()) before.insert(init.value);
    size_t rounds = 0;
    for (;; ++rounds) {  // until a round folds nothing: each folds at least one node
      // What the last round (or an earlier pass) folded may complete types (a Reshape whose shape is now constant).
      if (options_.shapes) refineTypes();
      size_t shapes = options_.shapes ? foldShapes(perOp) + foldStaticParts(perOp) : 0;
      WeightFolder weights(rw_);
      weights.setMaxBytes(options_.maxBytes);
      weights.setKeepParameters(options_.keepParameters);
      std::vector<Node*> candidates;
      model_.graph().walkGraphs([&](Graph& g) {
        for (const auto& n : g.nodes()) candidates.push_back(n.get());
      });
      weights.fold(candidates);
      pruned += pruneUnusedInitializers(rw_, weights.pruneCandidates());
      for (const auto& [op, n] : weights.foldedPerOp()) perOp[op] += n;
      folded += shapes + weights.folded();
      tooLarge = weights.tooLarge();
      if (shapes + weights.folded() == 0) break;
    }
    ++rounds;
    if (!options_.keepParameters) {
      // Inference: what a runtime would read as a constant anyway is one.
      size_t constants = constantsToInitializers();
      context.details["constants_to_initializers"] = constants;
      otherNodes += constants;
      if (options_.shareDuplicates) context.details["duplicates_shared"] = shareDuplicates(before);
    }
    context.matched = folded + otherNodes;
    context.details["rounds"] = rounds;
    context.details["folded"] = perOp;
    context.details["left_too_large"] = tooLarge;
    context.details["initializers_pruned"] = pruned;
    context.details["max_bytes"] = options_.maxBytes;
  }

 private:
  // Constant nodes of the main graph become initializers of their output's name.
  size_t constantsToInitializers() {
    std::vector<Node*> found;
    for (const auto& n : model_.graph().nodes())
      if (isDefaultDomain(n->domain()) && n->opType() == "Constant" && n->output(0)) found.push_back(n.get());
    size_t done = 0;
    WeightFolder weights(rw_);
    for (Node* n : found) {
      const HostTensor* t = weights.constantValue(n->output(0));
      if (!t) continue;  // a sparse or string value: left as it is
      HostTensor value = *t;
      Value* old = n->output(0);
      std::string name = old->name().str();
      rw_.renameValue(old, name + "/constant");
      Value* init = rw_.addInitializer(model_.graph(), name, std::make_unique<Tensor>(toTensorProto(value, name)));
      rw_.replaceAllUsesWith(old, init, /*graphOutputs=*/true);
      rw_.eraseNode(n);
      done++;
    }
    return done;
  }

  // Initializers this run made (folded results, former Constants) that hold
  // the same small tensor become one: the first, in graph order.
  size_t shareDuplicates(const std::set<const Value*>& before) {
    constexpr uint64_t kSmall = 1024;
    std::map<std::string, Value*> first;
    std::vector<std::pair<Value*, Value*>> same;
    for (const auto& init : model_.graph().initializers()) {
      Value* v = init.value;
      if (before.count(v) || v->isGraphInput() || v->graphOutputCount() > 0 || v->initializer()->storedBytes() > kSmall)
        continue;
      auto [it, fresh] = first.emplace(contentKey(readTensor(*v->initializer())), v);
      if (!fresh) same.emplace_back(v, it->second);
    }
    for (auto [v, keep] : same) {
      rw_.replaceAllUsesWith(v, keep);
      rw_.eraseInitializer(v);
    }
    return same.size();
  }

  // Types that are not fully static are inferred again: constants folded in
  // the last round (a Reshape's shape) can make them so. A value inference
  // still cannot type keeps what it had.
  void refineTypes() {
    std::vector<std::pair<Value*, onnx::TypeProto>> partial;
    model_.graph().walkGraphs([&](Graph& g) {
      for (const auto& v : g.values())
        if (v->type() && v->producer() && !staticDims(v.get())) partial.emplace_back(v.get(), *v->type());
    });
    for (auto& [v, _] : partial) rw_.forgetType(v);
    inferInOrder(rw_);
    for (auto& [v, t] : partial)
      if (!v->type()) rw_.setType(v, t);
  }

  // Shape and Size of a tensor whose shape is static become initializers.
  size_t foldShapes(std::map<std::string, size_t>& perOp) {
    std::vector<Node*> nodes;
    model_.graph().walkGraphs([&](Graph& g) {
      for (const auto& n : g.nodes())
        if (isDefaultDomain(n->domain()) && (n->opType() == "Shape" || n->opType() == "Size") && n->input(0) &&
            n->output(0) && staticDims(n->input(0)))
          nodes.push_back(n.get());
    });
    size_t folded = 0;
    for (Node* n : nodes) {
      // An earlier fold in this loop may have replaced the input (by a Constant of known type).
      auto dims = staticDims(n->input(0));
      if (!dims) continue;
      HostTensor shapeOnly{onnx::TensorProto::FLOAT, std::move(*dims), {}};
      std::string why;
      auto out = evaluate(*n, {&shapeOnly}, why);
      if (!out) continue;
      Value* old = n->output(0);
      std::string name = old->name().str();
      rw_.renameValue(old, name + "/folded");
      WeightFolder weights(rw_);
      weights.setKeepParameters(options_.keepParameters);
      Value* c = weights.constant(*n->graph(), n, (*out)[0], name);
      rw_.replaceAllUsesWith(old, c, /*graphOutputs=*/true);
      perOp[n->opType()]++;
      rw_.eraseNode(n);
      folded++;
    }
    return folded;
  }

  // A Shape of a tensor with some dimensions unknown: a Gather or Slice of it
  // that selects only known dimensions is a constant (the batch dimension
  // dynamic, the hidden size read by Shape -> Gather 2).
  size_t foldStaticParts(std::map<std::string, size_t>& perOp) {
    std::vector<std::pair<Node*, Node*>> found;  // (Shape, its Gather / Slice reader)
    model_.graph().walkGraphs([&](Graph& g) {
      if (g.owningFunction()) return;
      for (const auto& n : g.nodes()) {
        if (!isDefaultDomain(n->domain()) || n->opType() != "Shape" || !n->input(0) || !n->output(0)) continue;
        const onnx::TypeProto* t = n->input(0)->type();
        if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape() || staticDims(n->input(0))) continue;
        for (const Use& u : n->output(0)->uses())
          if (u.index == 0 && isDefaultDomain(u.node->domain()) &&
              (u.node->opType() == "Gather" || u.node->opType() == "Slice"))
            found.emplace_back(n.get(), u.node);
      }
    });
    size_t folded = 0;
    std::set<Node*> done;
    for (auto [shape, reader] : found) {
      if (done.count(reader) || reader->input(0) != shape->output(0)) continue;
      // The shape with -1 for each unknown dimension (a real one is never negative).
      std::vector<int64_t> dims;
      for (const auto& d : shape->input(0)->type()->tensor_type().shape().dim())
        dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
      if (shape->attribute("start") || shape->attribute("end")) continue;  // Shape-15's part of the shape: left alone
      HostTensor known{
          onnx::TensorProto::INT64, {static_cast<int64_t>(dims.size())}, std::string(dims.size() * 8, '\0')};
      if (!dims.empty()) std::memcpy(known.data.data(), dims.data(), dims.size() * 8);
      std::string why;
      std::vector<const HostTensor*> inputs{&known};
      std::vector<HostTensor> held;
      held.reserve(reader->inputs().size());
      bool constant = true;
      for (size_t i = 1; i < reader->inputs().size(); ++i) {
        Value* v = reader->input(i);
        if (!v) {
          inputs.push_back(nullptr);
          continue;
        }
        auto c = constantOf(v);
        if (!c)
          constant = false;
        else
          held.push_back(std::move(*c));
        inputs.push_back(c ? &held.back() : nullptr);
      }
      if (!constant) continue;
      auto out = evaluate(*reader, inputs, why);
      if (!out || out->size() != 1) continue;
      bool allKnown = true;
      for (int64_t v : (*out)[0].asInts()) allKnown &= v >= 0;
      if (!allKnown) continue;
      Value* old = reader->output(0);
      std::string name = old->name().str();
      rw_.renameValue(old, name + "/folded");
      WeightFolder weights(rw_);
      weights.setKeepParameters(options_.keepParameters);
      rw_.replaceAllUsesWith(old, weights.constant(*reader->graph(), reader, (*out)[0], name), /*graphOutputs=*/true);
      perOp[reader->opType() + " of a partly known Shape"]++;
      rw_.eraseNode(reader);
      done.insert(reader);
      folded++;
    }
    return folded;
  }

  const FoldOptions& options_;
  Model& model_;
  Rewriter& rw_;
};

class FoldPass final : public Pass {
 public:
  explicit FoldPass(FoldOptions options) : options_(options) {}
  std::string name() const override { return kFoldPass; }
  void run(Model& model, PassContext& context) const override {
    FoldRun(options_, model, context.rewriter).run(context);
  }

 private:
  const FoldOptions options_;
};

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = kFoldPass,
    .summary = "Evaluate nodes whose inputs are all constant (and Shape of static tensors) into initializers",
    .description =
        "Constant folding: nodes whose inputs are all constant (initializers, Constant nodes, and Shape / Size "
        "of tensors whose shape is static) become initializers, for the ops shape computations use and weight "
        "layout changes. Function bodies are left alone.",
    .outputTag = "folded",
    .options =
        {
            {.key = "max_bytes",
             .flags = "--max-bytes",
             .kind = Kind::Integer,
             .help = "Leave results (and initializer inputs) over this many bytes alone; large weights are never read",
             .schema = {{"type", "integer"}, {"minimum", 0}},
             .defaultValue = kDefaultFoldMaxBytes},
            {.key = "shapes",
             .flags = "--no-shapes",
             .kind = Kind::NoFlag,
             .help = "Fold Shape / Size of tensors whose shape is static (--no-shapes: do not)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "keep_parameters",
             .flags = "--keep-parameters",
             .kind = Kind::Flag,
             .help = "Treat initializers as trained parameters (a training session makes each one a Variable): ops "
                     "reading them stay ops, and folded results are Constant nodes, not new initializers",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
            {.key = "share_duplicates",
             .flags = "--no-share-duplicates",
             .kind = Kind::NoFlag,
             .help = "Small initializers this run makes (folded results, former Constant nodes) that hold equal "
                     "tensors become one (--no-share-duplicates: each reader keeps its own, as pipelined PopART "
                     "needs when the readers end up on different IPUs)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
        },
    .examples =
        {
            "graphrw fold model.onnx",
            "graphrw set-shapes model.onnx --input input_ids=1,128 -o - | graphrw fold - -o static.onnx",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext&, const std::string&) {
          FoldOptions o;
          o.maxBytes = entry.at("max_bytes").get<uint64_t>();
          o.shapes = entry.at("shapes").get<bool>();
          o.keepParameters = entry.at("keep_parameters").get<bool>();
          o.shareDuplicates = entry.at("share_duplicates").get<bool>();
          return createFoldPass(o);
        },
}};

}  // namespace

std::unique_ptr<Pass> createFoldPass(FoldOptions options) { return std::make_unique<FoldPass>(options); }

}  // namespace graphrw::passes
