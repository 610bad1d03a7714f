#include "passes/opset/opset.h"
#include "analysis/extensions.h"
#include "analysis/schemas.h"

#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <set>
#include <unordered_map>

#include "analysis/opsets.h"
#include "analysis/types.h"
#include "fold/weights.h"
#include "io/writer.h"
#include "passes/expand/expand.h"
#include "passes/opset/opset_adapters.h"
#include "support/error.h"
#include "support/json_text.h"
#include "support/pointer_set.h"

namespace graphrw::passes {
namespace {

using namespace ir;
using opset::StepContext;
using opset::StepResult;

const onnx::OpSchema* schemaAt(const std::string& op, int64_t version) {
  return findSchema(op, static_cast<int>(version), "");
}

constexpr uint64_t kSmallConstant = 1 << 20;  // constants copied into ONNX's converter

class OpsetRun {
 public:
  OpsetRun(const OpsetOptions& options, Model& model, Rewriter& rw)
      : options_(options), model_(model), rw_(rw), weights_(rw) {
    weights_.setKeepParameters(options.training);
  }

  void run(PassContext& context) {
    std::optional<int64_t> from = model_.opsetVersion("");
    if (options_.to && from && *from != *options_.to) {
      convertModel(*from, *options_.to, context);
    } else if (options_.to && !from) {
      rw_.setOpsetImport(model_.graph(), "", *options_.to);
    }
    // Constants and initializers that only fed inputs the conversion removed (axes, split, ...).
    for (Value* v : danglingConstants_) {
      Node* p = v->producer();
      if (p && v->uses().empty() && v->graphOutputCount() == 0) rw_.eraseNode(p);
    }
    for (Value* v : danglingInitializers_)
      if (v->isInitializer() && v->uses().empty() && v->graphOutputCount() == 0 && !v->isGraphInput())
        rw_.eraseInitializer(v);
    if (options_.irVersion) setIrVersion(*options_.irVersion);

    nlohmann::json converted = nlohmann::json::object();
    for (const auto& [op, by] : converted_)
      for (const auto& [adapter, count] : by) converted[op][adapter] = count;
    context.details["from"] = from ? nlohmann::json(*from) : nlohmann::json(nullptr);
    context.details["to"] = options_.to ? nlohmann::json(*options_.to) : nlohmann::json(from ? *from : 0);
    context.details["converted"] = converted;
    context.details["ir_version"] = model_.irVersion();
    context.matched = convertedNodes_;
  }

 private:
  void convertModel(int64_t from, int64_t to, PassContext& context) {
    inferMissingTypes(rw_);
    inferFunctionTypes(rw_);
    expandBodies(from, to, context);
    inferMissingTypes(rw_);
    inferFunctionTypes(rw_);
    convertScope(model_.graph(), from, to);
    rw_.setOpsetImport(model_.graph(), "", to);
    for (const auto& f : model_.functions()) {
      auto imports = f->opsetImports();
      auto it = imports.find("");
      if (it == imports.end()) it = imports.find("ai.onnx");
      if (it == imports.end() || it->second == to) continue;
      convertScope(f->body(), it->second, to);
      rw_.setOpsetImport(f->body(), "", to);
    }
    verify(to);
    if (!refusals_.empty()) {
      std::string msg = "opset: " + std::to_string(refusals_.size()) + " node" +
                        (refusals_.size() > 1 ? "s have" : " has") + " no form at ai.onnx " + std::to_string(to) + ": ";
      for (size_t i = 0; i < refusals_.size(); ++i) msg += (i ? "; " : "") + refusals_[i];
      fail(ExitCode::Unsupported, msg);
    }
  }

  // Ops with no form at the target whose schema has a function body are
  // expanded first (LayerNormalization, Celu, HardSwish, ...); their bodies'
  // ops are then converted like the others. A body may hold such ops in turn
  // (SoftmaxCrossEntropyLoss's NegativeLogLikelihoodLoss): expanded again,
  // until none is left that expand can write.
  void expandBodies(int64_t from, int64_t to, PassContext& context) {
    nlohmann::json expanded = nlohmann::json::object();
    for (int depth = 0; depth < 8; ++depth) {
      std::set<std::string> ops;
      model_.graph().walkGraphs([&](const Graph& g) {
        for (const auto& n : g.nodes()) {
          if (!isDefaultDomain(n->domain())) continue;
          const auto* s = schemaAt(n->opType(), from);
          if (!s || schemaAt(n->opType(), to) || opset::downAdapter(n->opType(), s->SinceVersion())) continue;
          if (s->HasFunction() || s->HasContextDependentFunction()) ops.insert(n->opType());
        }
      });
      if (ops.empty()) break;
      ExpandOptions options;
      options.schemaOps.assign(ops.begin(), ops.end());
      options.calls = false;  // local functions stay
      options.allowNoMatch = true;  // an op whose body cannot be written (unknown types) is refused below
      PassContext sub{rw_};
      createExpandPass(options)->run(model_, sub);
      size_t now = 0;
      for (const auto& [op, n] : sub.details["schema_ops_expanded"].items()) {
        expanded[op] = expanded.value(op, 0) + n.get<size_t>();
        now += n.get<size_t>();
      }
      if (!now) break;
    }
    if (!expanded.empty()) context.details["expanded"] = expanded;
  }

  void convertScope(Graph& root, int64_t from, int64_t to) {
    std::deque<std::pair<Node*, int64_t>> work;
    root.walkGraphs([&](Graph& g) {
      for (const auto& n : g.nodes())
        if (isDefaultDomain(n->domain())) work.emplace_back(n.get(), from);
    });
    while (!work.empty()) {
      auto [n, version] = work.front();
      work.pop_front();
      convertNode(n, version, to, work);
    }
  }

  void refuse(const Node& n, const std::string& why) {
    std::string where = inFunction(n), text = why;
    // Inside a function, set-shapes cannot help: the types come from the call sites.
    if (auto at = text.find(" (run set-shapes"); !where.empty() && at != std::string::npos)
      if (auto close = text.find(')', at); close != std::string::npos) text.erase(at, close + 1 - at);
    refusals_.push_back(nodeLabel(n) + ": " + text + where);
  }

  // For a node inside a local function: which function, and, where its call
  // sites give an input different types (so the body, converted once, knows
  // only what they share), which input and types; expanding the calls lets
  // each be converted with its own types.
  std::string inFunction(const Node& n) const {
    const Function* f = n.graph() ? n.graph()->owningFunction() : nullptr;
    if (!f) return "";
    std::vector<const Node*> calls;
    model_.graph().walkGraphs([&](const Graph& g) {
      for (const auto& c : g.nodes())
        if (model_.findFunction(c->domain(), c->opType(), c->overload()) == f) calls.push_back(c.get());
    });
    std::string why = " (in local function '" + f->key().str() + "', ";
    if (calls.empty()) return why + "which nothing calls, so the types of its inputs are unknown)";
    why += std::to_string(calls.size()) + " call site" + (calls.size() > 1 ? "s" : "");
    const auto& inputs = f->body().inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::set<std::string> types;
      for (const Node* c : calls)
        types.insert(typeString(i < c->inputs().size() && c->input(i) ? c->input(i)->type() : nullptr));
      if (types.size() < 2) continue;
      why += ", whose input '" + inputs[i].value->name() + "' has types";
      for (const auto& t : types) why += " " + t;
      return why + "; `graphrw expand` inlines the calls first, so that each is converted with its own types)";
    }
    return why + ")";
  }

  void count(const Node& n, const std::string& adapter) {
    bool seen = false;
    for (const auto& [a, nodes] : convertedBy_) seen = seen || nodes.contains(&n);
    if (!seen) ++convertedNodes_;
    if (convertedBy_[adapter].insert(&n)) converted_[n.opType()][adapter]++;
  }

  void noteInputs(const Node& n) {
    for (Value* v : n.inputs()) {
      if (v && v->isInitializer()) danglingInitializers_.insert(v);
      if (v && v->producer() && v->producer()->opType() == "Constant" && isDefaultDomain(v->producer()->domain()))
        danglingConstants_.insert(v);
    }
  }

  void convertNode(Node* n, int64_t version, int64_t to, std::deque<std::pair<Node*, int64_t>>& work) {
    const std::string op = n->opType();
    while (true) {
      const auto* s = schemaAt(op, version);
      if (!s) return refuse(*n, "no ai.onnx " + op + " exists at opset " + std::to_string(version));
      const auto* target = schemaAt(op, to);
      if (target && target->SinceVersion() == s->SinceVersion()) return;
      if (to < version) {
        // Down one step: from the version where the op last changed to the one before.
        int64_t v = s->SinceVersion();
        if (auto adapter = opset::downAdapter(op, v)) {
          noteInputs(*n);
          StepContext c{rw_, weights_, v, options_.training};
          StepResult r = adapter(n, c);
          if (!r.refused.empty()) return refuse(*n, r.refused);
          bool self = false;
          for (Node* m : r.nodes) {
            count(*m, "graphrw");
            if (m == n)
              self = true;
            else
              work.emplace_back(m, v - 1);
          }
          if (!self) return;
          version = v - 1;
          continue;
        }
        const auto* before = schemaAt(op, v - 1);
        if (!before) return refuse(*n, op + " has no form before opset " + std::to_string(v));
        if (const auto* change = opset::knownChange(op, v)) {
          std::string why = opset::applyKnownChange(n, *change, *s, rw_);
          if (!why.empty()) return refuse(*n, why);
          count(*n, "graphrw-compatible");
          version = v - 1;
          continue;
        }
        if (!viaOnnx(n, v, v - 1, work)) return;
        return;
      }
      // Up one step: to the next version where the op changed.
      int64_t next = version + 1;
      while (next <= to && schemaAt(op, next) && schemaAt(op, next)->SinceVersion() == s->SinceVersion()) ++next;
      if (next > to) return;
      if (const auto* change = opset::knownChange(op, next)) {
        if (!change->attribute.empty() && !n->attribute(change->attribute)) {
          // The new version's default may differ from the old behaviour: say it.
          const auto* after = schemaAt(op, next);
          auto it = after->attributes().find(change->attribute);
          if (it == after->attributes().end() || it->second.default_value.SerializeAsString() != [&] {
                auto d = change->oldValue;
                d.clear_name();
                return d.SerializeAsString();
              }())
            rw_.setAttribute(n, change->oldValue);
        }
        count(*n, "graphrw-compatible");
        version = next;
        continue;
      }
      if (!viaOnnx(n, next - 1, next, work)) return;
      return;
    }
  }

  // One step by ONNX's converter on a model holding only this node (and its
  // small constant inputs). The nodes it gives continue at `to`.
  // Long: the one-node model built, ONNX's converter run on it, and its nodes and constants
  // taken back into the graph: one exchange with the converter.
  bool viaOnnx(Node* n, int64_t from, int64_t to, std::deque<std::pair<Node*, int64_t>>& work) {
    if (!n->subgraphs().empty()) {
      refuse(*n, "no adapter from " + n->opType() + "-" + std::to_string(from) + " to opset " + std::to_string(to));
      return false;
    }
    onnx::ModelProto mp;
    mp.set_ir_version(8);
    auto* imp = mp.add_opset_import();
    imp->set_domain("");
    imp->set_version(from);
    auto* g = mp.mutable_graph();
    g->set_name("step");
    *g->add_node() = nodeToProto(*n);
    std::unordered_map<std::string_view, Value*> byName;  // names in the model's arena
    for (Value* v : n->inputs()) {
      if (!v || byName.count(v->name())) continue;
      byName[v->name()] = v;
      const HostTensor* t = nullptr;
      if (v->isInitializer() ? v->initializer()->storedBytes() <= kSmallConstant : v->producer() != nullptr)
        t = weights_.constantValue(v);
      if (t && t->data.size() <= kSmallConstant) {
        *g->add_initializer() = toTensorProto(*t, v->name().str());
      } else {
        auto* in = g->add_input();
        in->set_name(v->name().str());
        if (v->type()) *in->mutable_type() = *v->type();
      }
    }
    std::map<std::string, size_t, std::less<>> outputs;
    for (size_t i = 0; i < n->outputs().size(); ++i)
      if (Value* v = n->output(i)) {
        g->add_output()->set_name(v->name().str());
        outputs[v->name().str()] = i;
      }
    onnx::ModelProto result;
    try {
      result = onnx::version_conversion::ConvertVersion(mp, static_cast<int>(to));
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      refuse(*n, "neither graphrw nor ONNX's converter can take " + n->opType() + " from opset " +
                     std::to_string(from) + " to " + std::to_string(to) + " (" + what + ")");
      return false;
    }
    noteInputs(*n);
    Graph& graph = *n->graph();
    for (const auto& init : result.graph().initializer()) {
      if (byName.count(init.name())) continue;
      Value* c = weights_.constant(graph, n, readTensor(Tensor(init)), init.name());
      if (c->producer()) work.emplace_back(c->producer(), to);
      byName[init.name()] = c;
    }
    std::vector<Node*> created;
    for (const auto& np : result.graph().node()) {
      std::vector<Value*> inputs;
      for (const auto& name : np.input()) {
        if (name.empty()) {
          inputs.push_back(nullptr);
          continue;
        }
        auto it = byName.find(name);
        if (it == byName.end())
          fail(ExitCode::Internal,
               "opset: ONNX's converter gave " + nodeLabel(*n) + " an unknown input '" + name + "'");
        inputs.push_back(it->second);
      }
      std::vector<std::string> outs;
      for (const auto& name : np.output()) outs.push_back(outputs.count(name) ? "" : name);
      if (!isDefaultDomain(np.domain()))
        fail(ExitCode::Internal, "opset: ONNX's converter gave " + nodeLabel(*n) + " an op of domain " + np.domain());
      Node* m =
          rw_.createNode(graph, n, {np.name().empty() ? n->name().str() : np.name(), np.op_type(), "", inputs, outs});
      for (const auto& a : np.attribute()) rw_.setAttribute(m, a);
      for (int j = 0; j < np.output_size(); ++j) {
        auto it = outputs.find(np.output(j));
        if (it != outputs.end())
          rw_.adoptOutput(m, static_cast<size_t>(j), n->output(it->second));
        else if (!np.output(j).empty())
          byName[np.output(j)] = m->output(static_cast<size_t>(j));
      }
      created.push_back(m);
    }
    for (Value* v : n->outputs())
      if (v) fail(ExitCode::Internal, "opset: ONNX's converter lost output '" + v->name() + "' of " + nodeLabel(*n));
    for (Node* m : created) {
      count(*m, "onnx");
      work.emplace_back(m, to);
    }
    // A node made later may take its address.
    bool seen = false;
    for (auto& [adapter, nodes] : convertedBy_) seen = nodes.erase(n) || seen;
    if (seen) --convertedNodes_;
    rw_.eraseNode(n);
    return true;
  }

  // Every ai.onnx node of the converted scopes exists at the target with the
  // attributes and (known) types it has: nothing claims an opset it is not in.
  void verify(int64_t to) {
    if (!refusals_.empty()) return;
    auto check = [&](Graph& root) {
      root.walkGraphs([&](Graph& g) {
        for (const auto& n : g.nodes()) {
          if (!isDefaultDomain(n->domain())) continue;
          const auto* s = schemaAt(n->opType(), to);
          if (!s) {
            refuse(*n, n->opType() + " does not exist at opset " + std::to_string(to));
            continue;
          }
          if (s->Deprecated())
            refuse(*n, n->opType() + " is deprecated at opset " + std::to_string(to));
          else if (auto why = opset::checkTypes(*n, *s); !why.empty())
            refuse(*n, why);
        }
      });
    };
    check(model_.graph());
    for (const auto& f : model_.functions()) {
      auto imports = f->opsetImports();
      if (imports.count("") && imports.at("") == to) check(f->body());
    }
  }

  void setIrVersion(int64_t ir) {
    if (ir < 3 || ir > onnx::Version::IR_VERSION)
      fail(ExitCode::Usage,
           "opset: IR version " + std::to_string(ir) + " is outside 3.." + std::to_string(onnx::Version::IR_VERSION));
    std::vector<std::string> lacks;
    if (ir < 8 && !model_.functions().empty()) lacks.push_back("local functions need IR version 8");
    if (auto v = model_.opsetVersion(""); v && ir < irVersionFor(*v))
      lacks.push_back("ai.onnx " + std::to_string(*v) + " needs IR version " + std::to_string(irVersionFor(*v)) +
                      " (ONNX's version table)");
    bool sparse = false, notInput = false;
    model_.graph().walkGraphs([&](const Graph& g) {
      if (!g.sparseInitializers().empty()) sparse = true;
      for (const auto& init : g.initializers())
        if (!init.value->isGraphInput()) notInput = true;
    });
    if (ir < 6 && sparse) lacks.push_back("sparse initializers need IR version 6");
    if (ir < 4 && notInput) lacks.push_back("initializers that are not graph inputs need IR version 4");
    if (!lacks.empty()) {
      std::string msg = "opset: cannot set IR version " + std::to_string(ir) + ": ";
      for (size_t i = 0; i < lacks.size(); ++i) msg += (i ? "; " : "") + lacks[i];
      fail(ExitCode::Unsupported, msg);
    }
    rw_.setIrVersion(ir);
  }

  const OpsetOptions& options_;
  Model& model_;
  Rewriter& rw_;
  WeightFolder weights_;
  std::vector<std::string> refusals_;
  std::map<std::string, std::map<std::string, size_t>> converted_;
  // Nodes converted by each adapter (a node counts once per adapter), and how
  // many in all: 8-byte slots, not a hash node and a std::set per node (150 MB
  // at a million nodes).
  size_t convertedNodes_ = 0;
  std::map<std::string, FlatPointerSet<Node>> convertedBy_;
  std::set<Value*> danglingInitializers_, danglingConstants_;
};

class OpsetPass final : public Pass {
 public:
  explicit OpsetPass(OpsetOptions options) : options_(options) {}
  std::string name() const override { return kOpsetPass; }
  void run(Model& model, PassContext& context) const override {
    OpsetRun(options_, model, context.rewriter).run(context);
  }

 private:
  const OpsetOptions options_;
};

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = kOpsetPass,
    .summary =
        "Convert ai.onnx ops to another opset version (down to 7, up to the newest ONNX knows) and set the IR version",
    .description =
        "Convert the model's ai.onnx ops (main graph, subgraphs, and functions importing ai.onnx) to another "
        "opset version, and/or set the IR version. A node with no form at the target is an error listing "
        "every such node; nothing is written.",
    .outputTag = "opset",
    .options =
        {
            {.key = "to",
             .flags = "--to",
             .kind = Kind::Integer,
             .help = "The ai.onnx opset version to convert to (7 up to the newest the ONNX library knows)",
             .schema = {{"type", "integer"}, {"minimum", 7}}},
            {.key = "ir_version",
             .flags = "--ir-version",
             .kind = Kind::Integer,
             .help = "The IR version to write; refused when the model uses something it lacks (local functions need "
                     "8, ai.onnx N needs ONNX's version-table IR)",
             .schema = {{"type", "integer"}, {"minimum", 3}}},
            {.key = "training",
             .flags = "--training",
             .kind = Kind::Flag,
             .help = "Keep training: a training-mode Dropout or BatchNormalization going below opset 12 / 14 becomes "
                     "the older form a runtime applies in training sessions (Dropout-10 with its ratio, "
                     "BatchNormalization-9 with five outputs, as PopART trains), and constants the conversion adds are "
                     "Constant nodes, not initializers (a training session trains every initializer)",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
        },
    .examples =
        {
            "graphrw opset model.onnx --to 11",
            "graphrw opset model.onnx --to 11 --ir-version 6 -o model.opset11.onnx",
        },
    .create = [](const nlohmann::json& entry, const RuleContext& where,
                 const std::string& pointer) -> std::unique_ptr<Pass> {
      OpsetOptions o;
      if (entry.contains("to")) o.to = entry["to"].get<int64_t>();
      if (entry.contains("ir_version")) o.irVersion = entry["ir_version"].get<int64_t>();
      o.training = entry.at("training").get<bool>();
      if (!o.to && !o.irVersion)
        usageError(where.at(pointer) + ": opset needs 'to' (--to) or 'ir_version' (--ir-version)");
      if (o.irVersion && (*o.irVersion < 3 || *o.irVersion > onnx::Version::IR_VERSION))
        usageError(where.at(pointer + "/ir_version") + ": IR version " + std::to_string(*o.irVersion) +
                   " is outside 3.." + std::to_string(onnx::Version::IR_VERSION));
      if (o.to && (*o.to < 7 || *o.to > newestOpset()))
        usageError(where.at(pointer + "/to") + ": ai.onnx " + std::to_string(*o.to) +
                   " is outside the versions graphrw converts (7.." + std::to_string(newestOpset()) + ")");
      return createOpsetPass(o);
    },
}};

}  // namespace

std::unique_ptr<Pass> createOpsetPass(OpsetOptions options) { return std::make_unique<OpsetPass>(options); }

}  // namespace graphrw::passes
