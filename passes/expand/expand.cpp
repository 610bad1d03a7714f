#include "passes/expand/expand.h"
#include "analysis/extensions.h"
#include "analysis/schemas.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "analysis/opsets.h"
#include "analysis/types.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/inliner.h"
#include "support/error.h"
#include "support/json_text.h"

namespace graphrw::passes {
namespace {

using namespace ir;

// One run over one model: the pass's per-run state.
class ExpandRun {
 public:
  ExpandRun(const ExpandOptions& options, Model& model, Rewriter& rw) : options_(options), model_(&model), rw_(&rw) {}

  void run(Model& model, PassContext& context) {
    auto before = ModelUsage::of(model);
    if (options_.calls && options_.select.empty()) {
      // Everything is inlined: refuse before any work when it would be too big.
      uint64_t total = expandedNodeCount(model);
      if (total > options_.maxNodes)
        usageError("expand: the model would have " + std::to_string(total) + " nodes once inlined, over the limit of " +
                   std::to_string(options_.maxNodes) + " (--max-nodes / max_nodes)");
    }

    // Calls first: function bodies (calls inside kept functions are inlined
    // too), then the main graph. Schema ops second, once calls are gone and
    // shape inference can see their inputs.
    for (Phase phase : {Phase::Calls, Phase::SchemaOps}) {
      if (phase == Phase::SchemaOps && !options_.schemaAll && options_.schemaOps.empty()) break;
      phase_ = phase;
      // Callees first: a body is flat before it is copied into its callers,
      // so a chain of N functions costs N copies, not N^2.
      for (Function* f : functionsCalleesFirst(model)) expandGraph(f->body(), {"function " + f->key().str()});
      expandGraph(model.graph(), {});
    }

    auto removed = pruneUnused(*rw_, before);
    reportLeftUntyped(model);

    // A list of alternatives is one selector: it matches nothing only when no alternative does.
    bool hit = false;
    for (const auto& sel : options_.select.any) hit |= selectorHits_.count(sel.str()) > 0;
    if (!options_.select.any.empty() && !hit)
      reportNoMatch("expand", "selector '" + options_.select.str() + "' matched no call", options_.allowNoMatch);
    context.matched = matched_;
    nlohmann::json inlined = nlohmann::json::object();
    for (const auto& [k, n] : inlinedPerFunction_) inlined[k] = n;
    nlohmann::json schema = nlohmann::json::object();
    for (const auto& [k, n] : schemaPerOp_) schema[k] = n;
    context.details["calls_inlined"] = inlined;
    context.details["schema_ops_expanded"] = schema;
    context.details["functions_removed"] = removed;
  }

 private:
  enum class Phase { Calls, SchemaOps };
  enum class Kind { None, Function, GraphCall, SchemaOp };
  struct Target {
    Kind kind = Kind::None;
    Function* function = nullptr;
    const onnx::OpSchema* schema = nullptr;
    std::string key;  // for cycle detection and the report
  };

  bool selected(const Node& n) {
    if (options_.select.empty()) return true;
    bool any = false;
    for (const auto& sel : options_.select.any)
      if (sel.matches(n)) {
        selectorHits_.insert(sel.str());
        any = true;
      }
    return any;
  }

  Target classify(Node& n, const std::map<std::string, int64_t>& opsets) {
    Target t;
    if (options_.exclude.matches(n)) return t;
    if (Function* f = model_->findFunction(n.domain(), n.opType(), n.overload())) {
      if (phase_ != Phase::Calls || !options_.calls || !selected(n)) return t;
      t = {Kind::Function, f, nullptr, "function " + f->key().str()};
      return t;
    }
    if (const ext::CallOp* call = ext::callOp(n)) {
      const Attribute* callee = n.attribute(call->calleeAttribute);
      if (!callee || !callee->g()) badInput(nodeLabel(n) + " has no '" + call->calleeAttribute + "' GRAPH attribute");
      if (phase_ != Phase::Calls || !options_.calls || !selected(n)) return t;
      t = {Kind::GraphCall, nullptr, nullptr, "callee " + callee->g()->residual().name()};
      return t;
    }
    if (phase_ != Phase::SchemaOps) return t;
    std::string domain = isDefaultDomain(n.domain()) ? "" : n.domain();
    auto it = opsets.find(domain);
    int64_t version = it != opsets.end() ? it->second : 0;
    const onnx::OpSchema* schema = version > 0 ? findSchema(n.opType(), static_cast<int>(version), domain) : nullptr;
    if (!schema) {
      spdlog::debug("expand: {} is neither a local function nor a known op; left alone", nodeLabel(n));
      return t;
    }
    bool wanted = options_.schemaAll || std::find(options_.schemaOps.begin(), options_.schemaOps.end(), n.opType()) !=
                                            options_.schemaOps.end();
    if (wanted && (schema->HasFunction() || schema->HasContextDependentFunction()))
      t = {Kind::SchemaOp, nullptr, schema, "schema " + n.opType()};
    return t;
  }

  // Inlines every target in `g` (and its subgraphs); nodes created by an
  // inlining are examined in turn, with `stack` holding what is being expanded.
  void expandGraph(Graph& g, const std::vector<std::string>& stack) {
    std::vector<Node*> work;
    size_t growth = 0;  // what the first level of inlining adds, to size the tables once
    for (const auto& n : g.nodes()) {
      work.push_back(n.get());
      if (phase_ == Phase::Calls)
        if (Function* f = model_->findFunction(n->domain(), n->opType(), n->overload()))
          growth += f->body().nodeCount();
    }
    // Each inlined call's node name (and any output it does not hand on) goes
    // as its body comes in: room for those slots too, not a rebuild near the end.
    if (growth > 1024) rw_->reserve(g, growth + work.size(), growth + work.size());
    process(g, work, stack);
  }

  void process(Graph& g, const std::vector<Node*>& nodes, std::vector<std::string> stack) {
    auto opsets = scopeOpsets(*model_, g);
    for (Node* n : nodes) {
      Target t = classify(*n, opsets);
      if (t.kind == Kind::None) {
        n->forEachSubgraph([&](Graph& sub) {
          std::vector<Node*> inner;
          for (const auto& m : sub.nodes()) inner.push_back(m.get());
          process(sub, inner, stack);
        });
        continue;
      }
      if (std::find(stack.begin(), stack.end(), t.key) != stack.end()) {
        std::string cycle;
        for (auto it = std::find(stack.begin(), stack.end(), t.key); it != stack.end(); ++it) cycle += *it + " -> ";
        badInput("call cycle: " + cycle + t.key);
      }
      if (t.kind == Kind::SchemaOp && !typesKnown(g, *n, *t.schema)) continue;
      auto placement = ext::placementOf(*n);
      std::vector<Node*> created = inlineTarget(g, n, t, opsets);
      ext::applyPlacement(*rw_, created, placement);  // inlined ops run where the call ran
      if (rw_->counts().nodesAdded > options_.maxNodes)
        usageError("expand: inlining created over " + std::to_string(options_.maxNodes) +
                   " nodes (--max-nodes / max_nodes); stopped at " + nodeLabel(*n));
      auto next = stack;
      next.push_back(t.key);
      process(g, created, next);
      opsets = scopeOpsets(*model_, g);  // inlining may have added imports
    }
  }

  std::vector<Node*> inlineTarget(Graph& g, Node* n, const Target& t, const std::map<std::string, int64_t>& opsets) {
    std::string prefix = n->name().empty() ? rw_->reserveNodeName(g, n->opType()) : n->name().str();
    matched_++;
    switch (t.kind) {
      case Kind::Function: {
        const Function* body = bodyFor(*t.function, g, opsets, nodeLabel(*n));
        AttributeEnv env = AttributeEnv::of(*n);
        for (auto& d : body->attributeDefaults()) env.defaults[d.name()] = d;
        inlinedPerFunction_[t.function->key().str()]++;
        return inlineBody(*rw_, n, body->body(), env, prefix).created;
      }
      case Kind::GraphCall: {
        const ext::CallOp* call = ext::callOp(*n);
        const Attribute* callee = n->attribute(call->calleeAttribute);
        inlinedPerFunction_[call->domain + "::" + call->opType + " " + callee->g()->residual().name()]++;
        return inlineBody(*rw_, n, *callee->g(), AttributeEnv{}, prefix).created;
      }
      case Kind::SchemaOp: {
        auto fn = schemaFunction(*n, *t.schema);
        std::unique_ptr<Function> converted;
        const Function* body = bodyFor(*fn, g, opsets, nodeLabel(*n), &converted);
        if (!body) {
          matched_--;
          return {};
        }
        AttributeEnv env = AttributeEnv::of(*n);
        for (const auto& [name, attr] : t.schema->attributes())
          if (attr.default_value.has_type() || attr.default_value.has_name()) {
            onnx::AttributeProto d = attr.default_value;
            d.set_name(name);
            env.defaults[name] = d;
          }
        schemaPerOp_[n->opType()]++;
        return inlineBody(*rw_, n, body->body(), env, prefix).created;
      }
      case Kind::None:
        break;
    }
    return {};
  }

  // The function's body as it may be inlined into `g`: merges its opset
  // imports into g's scope; an ai.onnx version that differs for an op the body
  // uses is an error, or is converted with --convert-opset.
  // For a schema op, `schemaCopy` receives a converted body when one is needed;
  // a schema op whose body cannot be used is left as it is (nullptr), with a
  // warning: it is a valid standard op either way. A local function cannot stay.
  const Function* bodyFor(const Function& fn, Graph& g, const std::map<std::string, int64_t>& scope,
                          const std::string& where, std::unique_ptr<Function>* schemaCopy = nullptr) {
    const bool mayLeave = schemaCopy != nullptr;
    const Function* body = &fn;
    for (const auto& [domain, version] : fn.opsetImports()) {
      auto it = scope.find(domain);
      if (it == scope.end()) {
        rw_->setOpsetImport(g, domain, version);
        continue;
      }
      if (it->second == version) continue;
      auto differ = differingOps(fn.body(), domain, version, it->second);
      if (differ.empty()) continue;
      std::string name = domainShown(domain);
      // Schema bodies are ONNX's own: converting them is always what the user wants.
      bool convert = (options_.convertOpset || mayLeave) && domain.empty();
      if (!convert) {
        std::string ops;
        for (const auto& op : differ) ops += (ops.empty() ? "" : ", ") + op;
        std::string msg = "cannot inline " + fn.key().str() + " at " + where + ": it imports " + name + " " +
                          std::to_string(version) + " but the enclosing scope imports " + name + " " +
                          std::to_string(it->second) + ", and " + ops + " differ between them" +
                          (domain.empty() ? " (--convert-opset converts the body)" : "");
        if (!mayLeave) badInput(msg);
        spdlog::warn("expand: {}; left as it is", msg);
        return nullptr;
      }
      if (mayLeave) {
        // A schema body is built per node; convert it, or leave the op when ONNX cannot.
        try {
          *schemaCopy = convertFunction(*model_, *body, version, it->second);
        } catch (const Error& e) {
          spdlog::warn("expand: {} left as it is: {}", where, e.what());
          return nullptr;
        }
        body = schemaCopy->get();
        continue;
      }
      auto key = std::make_tuple(fn.key(), version, it->second);
      auto cached = converted_.find(key);
      if (cached == converted_.end())
        cached = converted_.emplace(key, convertFunction(*model_, fn, version, it->second)).first;
      body = cached->second.get();
    }
    return body;
  }

  std::unique_ptr<Function> schemaFunction(Node& n, const onnx::OpSchema& schema) {
    onnx::FunctionProto fp;
    if (schema.HasFunction()) {
      fp = *schema.GetFunction();
    } else {
      std::vector<onnx::TypeProto> types;
      for (Value* in : n.inputs()) types.push_back(in && in->type() ? *in->type() : onnx::TypeProto());
      onnx::NodeProto np = nodeToProto(n);
      onnx::FunctionBodyBuildContextImpl ctx(np, types);
      if (!schema.BuildContextDependentFunction(ctx, fp))
        badInput("cannot expand " + nodeLabel(n) + ": ONNX could not build its function body for these input types");
    }
    fp.set_name(n.opType());
    fp.set_domain(n.domain());
    // Optional outputs the node does not have may be produced by nothing in the body.
    while (fp.output_size() > static_cast<int>(n.outputs().size())) fp.mutable_output()->RemoveLast();
    if (fp.opset_import_size() == 0) {
      auto* op = fp.add_opset_import();
      op->set_domain(n.domain());
      op->set_version(schema.SinceVersion());
    }
    return buildFunction(*model_, std::move(fp));
  }

  // A context-dependent body needs its inputs' types: from the model, or from
  // shape inference (re-run only when the graph changed since the last run).
  // Inside a function body there is nothing to infer from: the op is left as it is.
  bool typesKnown(Graph& g, Node& n, const onnx::OpSchema& schema) {
    if (!schema.HasContextDependentFunction() || schema.HasFunction()) return true;
    auto missing = [&] {
      for (Value* in : n.inputs())
        if (in && !in->type()) return in;
      return static_cast<Value*>(nullptr);
    };
    if (!missing()) return true;
    if (!g.owningFunction()) {
      size_t version = rw_->counts().nodesAdded + rw_->counts().nodesRemoved;
      if (!inferredAt_ || *inferredAt_ != version) {
        inferMissingTypes(*rw_);
        inferredAt_ = version;
      }
    }
    if (Value* in = missing()) {
      // In a function body this is expected: the copies inlined into the
      // graph are expanded there. What is left at the end is reported then.
      leftUntyped_[&n] = {n.opType(), in->name().str()};
      spdlog::debug("expand: {} not expanded here: the type of input '{}' is unknown", nodeLabel(n), in->name().view());
      return false;
    }
    return true;
  }

  // Nodes of the requested schema ops that are still in the model after
  // expansion, because an input's type was unknown.
  void reportLeftUntyped(Model& model) {
    model.walkGraphs([&](Graph& g) {
      for (const auto& n : g.nodes())
        if (auto it = leftUntyped_.find(n.get()); it != leftUntyped_.end() && it->second.first == n->opType())
          spdlog::warn("expand: cannot expand {}: the type of input '{}' is unknown; left as it is", nodeLabel(*n),
                       it->second.second);
    });
  }

  const ExpandOptions& options_;
  Model* model_;
  Rewriter* rw_;
  size_t matched_ = 0;
  Phase phase_ = Phase::Calls;
  // node -> (its op type, the input whose type is unknown); the op type guards against a reused address
  std::unordered_map<const Node*, std::pair<std::string, std::string>> leftUntyped_;
  std::optional<size_t> inferredAt_;
  std::set<std::string> selectorHits_;
  std::map<std::string, size_t> inlinedPerFunction_, schemaPerOp_;
  std::map<std::tuple<FunctionKey, int64_t, int64_t>, std::unique_ptr<Function>> converted_;
};

class ExpandPass final : public Pass {
 public:
  explicit ExpandPass(ExpandOptions options) : options_(std::move(options)) {}
  std::string name() const override { return kExpandPass; }
  void run(Model& model, PassContext& context) const override {
    ExpandRun(options_, model, context.rewriter).run(model, context);
  }

 private:
  const ExpandOptions options_;
};

}  // namespace

ExpandOptions expandOptionsFromJson(const nlohmann::json& given, const RuleContext& rules, const std::string& pointer) {
  const nlohmann::json j = withDefaults(kExpandPass, given);
  ExpandOptions o;
  auto at = [&](const std::string& p) { return rules.at(p); };
  if (j.contains("select")) o.select = SelectorSet::fromJson(j["select"], at, pointer + "/select");
  if (j.contains("exclude")) o.exclude = SelectorSet::fromJson(j["exclude"], at, pointer + "/exclude");
  if (j.contains("schema_ops")) {
    if (j["schema_ops"].is_string())
      o.schemaAll = true;
    else
      o.schemaOps = j["schema_ops"].get<std::vector<std::string>>();
  }
  // Each named op must be an ai.onnx op with a function body (at some version): checked before any model is read.
  std::vector<std::string> bodied, all;
  for (const auto& schema : allSchemas()) {
    if (!schema.domain().empty()) continue;
    all.push_back(schema.Name());
    if (schema.HasFunction() || schema.HasContextDependentFunction()) bodied.push_back(schema.Name());
  }
  for (size_t i = 0; i < o.schemaOps.size(); ++i) {
    const std::string& op = o.schemaOps[i];
    std::string where = rules.at(pointer + "/schema_ops/" + std::to_string(i));
    if (std::find(bodied.begin(), bodied.end(), op) != bodied.end()) continue;
    if (std::find(all.begin(), all.end(), op) != all.end())
      usageError(where + ": " + op + " has no function body in ONNX's schema, so it cannot be expanded");
    std::string msg = where + ": ai.onnx has no op '" + op + "'";
    if (auto near = didYouMean(op, bodied)) msg += " (did you mean '" + *near + "'?)";
    usageError(msg);
  }
  o.convertOpset = j.at("convert_opset").get<bool>();
  o.allowNoMatch = j.at("allow_no_match").get<bool>();
  o.maxNodes = j.at("max_nodes").get<uint64_t>();
  return o;
}

std::unique_ptr<Pass> createExpandPass(ExpandOptions options) {
  return std::make_unique<ExpandPass>(std::move(options));
}

namespace {

using Kind = OptionSpec::Kind;

// --schema-ops all, or OP[,OP...]
nlohmann::json schemaOpsJson(const std::vector<std::string>& values) {
  if (values.size() == 1 && values[0] == "all") return "all";
  return values;
}

const RegisterPass registration{PassSpec{
    .name = kExpandPass,
    .summary =
        "Inline model-local functions, ai.graphcore::Call callees and, with --schema-ops, function-bodied standard ops",
    .outputTag = "expanded",
    .options =
        {
            {.key = "select",
             .flags = "--select",
             .kind = Kind::Selectors,
             .help = "Only calls matching this selector (absent: every call); key=value,... (repeat for any-of)",
             .schema = {{"$ref", "../rules.schema.json#/$defs/selectors"}}},
            {.key = "exclude",
             .flags = "--exclude",
             .kind = Kind::Selectors,
             .help = "Never inline nodes matching this selector (calls and schema ops; repeatable)",
             .schema = {{"$ref", "../rules.schema.json#/$defs/selectors"}}},
            {.key = "schema_ops",
             .flags = "--schema-ops",
             .kind = Kind::List,
             .help = "Also expand standard ops with a schema function body: all, or a list of op types",
             .schema = {{"oneOf",
                         {{{"const", "all"}},
                          {{"type", "array"}, {"items", {{"type", "string"}, {"minLength", 1}}}, {"minItems", 1}}}}},
             .convert = schemaOpsJson},
            {.key = "convert_opset",
             .flags = "--convert-opset",
             .kind = Kind::Flag,
             .help = "Convert bodies whose ai.onnx version differs, as the opset pass converts",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
            {.key = "allow_no_match",
             .flags = "--allow-no-match",
             .kind = Kind::Flag,
             .help = "A selector matching nothing is a warning, not an error",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
            {.key = "max_nodes",
             .flags = "--max-nodes",
             .kind = Kind::Integer,
             .help = "Refuse an expansion that would create more nodes than this",
             .schema = {{"type", "integer"}, {"minimum", 1}},
             .defaultValue = 10'000'000},
        },
    .examples =
        {
            "graphrw expand model.onnx",
            "graphrw expand model.onnx --select op_type=BertLayer --exclude name=/encoder/layer.11",
            "graphrw expand model.onnx --schema-ops LayerNormalization,Softmax -o - | graphrw inspect -",
        },
    .create = [](const nlohmann::json& entry, const RuleContext& where,
                 const std::string& pointer) { return createExpandPass(expandOptionsFromJson(entry, where, pointer)); },
}};

}  // namespace

}  // namespace graphrw::passes
