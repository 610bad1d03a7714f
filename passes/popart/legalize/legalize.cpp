#include "passes/popart/legalize/legalize.h"

#include <spdlog/spdlog.h>

#include <set>

#include "analysis/opsets.h"
#include "analysis/sparse.h"
#include "analysis/types.h"
#include "fold/fold.h"
#include "passes/expand/expand.h"
#include "passes/fold/fold.h"
#include "passes/opset/opset.h"
#include "passes/popart/legalize/legalize_training.h"
#include "passes/replace/replace.h"
#include "passes/set_shapes/set_shapes.h"
#include "pattern/pattern.h"
#include "support/embedded.h"
#include "support/error.h"
#include "target/popart/check.h"
#include "target/popart/graphcore_ops.h"
#include "target/popart/popart.h"
#include "target/popart/session.h"

namespace graphrw::passes {
namespace {

using namespace ir;
using Kind = OptionSpec::Kind;

// The target's data: what legalize does that is not code (schemas/targets/NAME.json).
struct TargetData {
  std::string file;
  std::string text;
  nlohmann::json json;
};

const TargetData& targetData(const std::string& target) {
  static const TargetData popart = [] {
    TargetData d;
    d.file = "schemas/targets/popart.json";
    d.text = std::string(embedded::file("targets/popart.json"));
    d.json = nlohmann::json::parse(d.text);
    return d;
  }();
  if (target != "popart") usageError("legalize: unknown target '" + target + "' (known: popart)");
  return popart;
}

// Graph inputs with a dimension that is not a fixed positive number, as "'ids' [batch, 128]".
std::vector<std::string> dynamicInputs(const Model& model) {
  std::vector<std::string> out;
  for (const auto& in : model.graph().inputs()) {
    const Value* v = in.value;
    if (v->isInitializer()) continue;
    const onnx::TypeProto* t = v->type();
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) {
      out.push_back("'" + v->name() + "' (no shape)");
      continue;
    }
    std::string dims;
    bool dynamic = false;
    for (const auto& d : t->tensor_type().shape().dim()) {
      bool fixed = d.has_dim_value() && d.dim_value() > 0;
      dynamic |= !fixed;
      dims += (dims.empty() ? "" : ", ") + (fixed               ? std::to_string(d.dim_value())
                                            : d.has_dim_param() ? d.dim_param()
                                                                : "?");
    }
    if (dynamic) out.push_back("'" + v->name() + "' [" + dims + "]");
  }
  return out;
}

class LegalizePass final : public Pass {
 public:
  explicit LegalizePass(LegalizeOptions options) : options_(std::move(options)) {
    const TargetData& data = targetData(options_.target);
    registerGraphcoreOps();  // the templates use ai.graphcore ops
    RuleContext where{data.file, data.text, {}};
    if (options_.mode != "training" && options_.mode != "inference")
      usageError("legalize: mode must be 'training' or 'inference', not '" + options_.mode + "'");
    if (!options_.frozen.empty() && options_.mode != "training")
      usageError("legalize: --frozen / frozen picks parameters of a training session; it needs mode training");
    if (options_.parameters && options_.mode != "training")
      usageError("legalize: --parameters / parameters names what a training session trains; it needs mode training");
    if (options_.gelu != "erf" && options_.gelu != "tanh")
      usageError("legalize: gelu must be 'erf' or 'tanh', not '" + options_.gelu + "'");
    if (options_.popartVersion.empty()) {
      version_ = newestPopart();
    } else if (auto v = parsePopartVersion(options_.popartVersion)) {
      version_ = *v;
    } else {
      usageError("legalize: popart_version must be a release X.Y (such as 3.2), not '" + options_.popartVersion + "'");
    }
    const auto& patterns = data.json.value("patterns", nlohmann::json::array());
    for (size_t i = 0; i < patterns.size(); ++i) {
      const auto& p = patterns[i];
      if (p.value("gelu", options_.gelu) != options_.gelu) continue;
      std::string at = where.at("/patterns/" + std::to_string(i));
      onnx::FunctionProto replacement = parseTemplate(p["replace"].get<std::string>(), at + "/replace");
      // A replacement with an op the PopART release lacks (GeluErf before 3.3) is not
      // applied: the chain stays in ai.onnx ops, which that release imports.
      if (!availableAt(replacement, version_)) continue;
      patterns_.emplace_back(parseTemplate(p["match"].get<std::string>(), at + "/match", TemplateRole::Match),
                             std::move(replacement), at);
    }
    replace_ = replaceOptionsFromJson(data.json["replace"], where, "/replace");
    replace_.quietNoMatch = true;  // the target's replacements apply to whatever a model has
    replace_.keepParameters = training();
  }

  std::string name() const override { return kLegalizePass; }

  static size_t densifySparseInitializers(Model& model, Rewriter& rw) {
    std::vector<std::pair<Value*, onnx::TensorProto>> dense;  // all made before any graph changes
    model.graph().walkGraphs([&](Graph& g) {
      for (const auto& s : g.sparseInitializers())
        dense.emplace_back(s.value, toTensorProto(densify(s.proto, UINT64_MAX), s.value->name().str()));
    });
    for (auto& [v, tensor] : dense) rw.makeDense(v, std::make_unique<Tensor>(std::move(tensor)));
    return dense.size();
  }
  bool training() const { return options_.mode == "training"; }

  // Long: legalize's steps in their order (inline, shapes, fold, patterns, replace, opset, fold,
  // check), each a few lines that hand the next one the model.
  void run(Model& model, PassContext& context) const override {
    Rewriter& rw = context.rewriter;
    const TargetData& data = targetData(options_.target);
    nlohmann::json steps = nlohmann::json::object();
    // legalize matches what its steps matched: each step's own count is in its
    // report entry, and the pass's `matched` is their sum with the nodes its own
    // rewrites (patterns, Dropouts, biases, types, shape ops, placement) touched.
    size_t& matched = context.matched;
    auto step = [&](const char* name, std::unique_ptr<Pass> pass) {
      PassContext sub{rw};
      pass->run(model, sub);
      steps[name] = std::move(sub.details);
      steps[name]["matched"] = sub.matched;
      matched += sub.matched;
    };
    auto own = [&](const char* name, size_t n) {
      if (n) steps[name] = n;
      matched += n;
    };

    // Local functions inlined (Call callees stay: PopART has Call), and
    // functions nothing calls removed: PopART has no ModelProto.functions.
    if (!model.functions().empty()) {
      ExpandOptions e;
      Selector call;
      call.opType = "Call";
      call.domain = "ai.graphcore";
      e.exclude.any.push_back(call);
      e.allowNoMatch = true;
      e.convertOpset = true;  // a body at another ai.onnx version is converted, as legalize converts the graph
      step("expand", createExpandPass(std::move(e)));
      std::vector<const Function*> left;
      for (const auto& f : model.functions()) left.push_back(f.get());
      for (const Function* f : left) rw.removeFunction(f);
    }

    // PopART reads graph.initializer only (willow/src/ir.cpp:2272): sparse
    // initializers become the dense tensors they stand for.
    if (size_t dense = densifySparseInitializers(model, rw)) {
      steps["densify"] = {{"sparse_initializers", dense}};
      matched += dense;
    }

    // Training: what is no parameter is a constant (PopART trains every initializer).
    legalize_detail::MadeConstant made;
    auto buffers = [&](const std::set<std::string>* names) {
      auto more = legalize_detail::constantBuffers(rw, model, names, options_.parametersFile);
      made.integer.insert(made.integer.end(), more.integer.begin(), more.integer.end());
      made.floating.insert(made.floating.end(), more.floating.begin(), more.floating.end());
      matched += more.count();
    };
    std::optional<legalize_detail::ParameterSnapshot> parameters;
    std::vector<std::string> frozen;
    if (training()) {
      buffers(options_.parameters ? &*options_.parameters : nullptr);
      if (!options_.frozen.empty()) frozen = legalize_detail::freezeParameters(rw, model, options_.frozen);
      matched += frozen.size();
      if (!frozen.empty()) steps["frozen"] = frozen;
      parameters = legalize_detail::ParameterSnapshot::of(model);
    }

    // set-shapes' rule for --input and --dim: a dimension name no input has is an error.
    SetShapesOptions shapes;
    shapes.inputs = options_.inputs;
    shapes.dims = options_.dims;
    if (!shapes.inputs.empty() || !shapes.dims.empty()) step("set-shapes", createSetShapesPass(std::move(shapes)));
    if (auto dynamic = dynamicInputs(model); !dynamic.empty()) {
      std::string list;
      for (const auto& d : dynamic) list += (list.empty() ? "" : ", ") + d;
      usageError("legalize: " + options_.target +
                 " needs static input shapes; give them with --input NAME=D,D,... or --dim NAME=N: " + list);
    }

    FoldOptions fold;
    fold.maxBytes = options_.foldMaxBytes;
    fold.keepParameters = training();
    // Not shared: stages placed later may read them on different IPUs, and
    // pipelined PopART copies no initializer between IPUs.
    fold.shareDuplicates = false;
    step("fold", createFoldPass(fold));
    own("dropout_identity_removed", legalize_detail::removeIdentityDropouts(rw, model, !training()));
    nlohmann::json rewritten = nlohmann::json::object();
    for (const Pattern& p : patterns_)
      if (size_t n = p.rewrite(model, rw, model.graph())) {
        rewritten[p.name()] = rewritten.value(p.name(), 0) + n;
        matched += n;
      }
    steps["patterns"] = rewritten;
    own("layernorm_zero_bias", zeroBiases(rw, model));
    step("replace", createReplacePass(replace_));

    int64_t opset = data.json.value("opset", 11);
    auto from = model.opsetVersion("");
    OpsetOptions o;
    if (!from || *from < 6 || *from > opset) o.to = opset;
    int64_t ir = data.json.value("ir_version", 6);
    if (model.irVersion() > ir) o.irVersion = ir;
    o.training = training();
    step("opset", createOpsetPass(o));
    step("fold_after_opset", createFoldPass(fold));
    // Types the export wrote before its shapes were fixed ("float[1,?,16]" on a
    // Gather of positions computed from the input's shape) are static now.
    own("types_made_static", refreshDynamicTypes(rw));
    if (training()) {
      own("noop_shape_ops_removed", legalize_detail::removeNoopShapeOps(rw, model));
      buffers(nullptr);  // integer initializers the steps made (an adapter's)
      if (made.count()) steps["made_constant"] = {{"integer", made.integer}, {"float", made.floating}};
    }

    // Imports of domains no node uses any more (an inlined function's).
    ModelUsage usage = ModelUsage::of(model);
    for (const auto& [domain, _] : model.opsetImports())
      if (!isDefaultDomain(domain) && !usage.domains.count(domain)) rw.removeOpsetImport(model.graph(), domain);
    if (usage.domains.count("ai.graphcore")) rw.setOpsetImport(model.graph(), "ai.graphcore", 1);

    // Ops the steps inserted (adapters, templates) run where their data comes from.
    own("placement_filled", popart::fillPlacement(rw, model.graph()));
    context.details["target"] = options_.target;
    context.details["mode"] = options_.mode;
    context.details["popart_version"] = version_.str();
    context.details["steps"] = std::move(steps);
    if (parameters) context.details["parameters_kept"] = parameters->check(model);
    auto findings = popart::checkImport(model, version_);
    for (auto& f : popart::checkSession(model, {training()})) findings.push_back(std::move(f));
    if (findings.empty()) return;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : findings) list.push_back({{"check", f.check}, {"where", f.where}, {"message", f.message}});
    context.details["findings"] = list;
    std::string msg = "legalize: " + options_.target + " would refuse the result (" + std::to_string(findings.size()) +
                      (findings.size() == 1 ? " finding" : " findings") + "): ";
    for (size_t i = 0; i < findings.size() && i < 8; ++i)
      msg += (i ? "; " : "") + findings[i].check + ": " + findings[i].where + ": " + findings[i].message;
    if (findings.size() > 8)
      msg += "; and " + std::to_string(findings.size() - 8) + " more (graphrw validate --target popart lists all)";
    fail(ExitCode::Unsupported, msg);
  }

 private:
  static bool availableAt(const onnx::FunctionProto& f, PopartVersion version) {
    for (const auto& n : f.node())
      if (n.domain() == "ai.graphcore")
        if (auto since = graphcoreOpSince(n.op_type()); since && *since > version) return false;
    return true;
  }

  // A LayerNormalization without bias (PyTorch's bias=False) gets a zero one
  // of its scale's shape (a Constant, which the replacement's weight folding
  // turns into the bias initializer), so that the replacement's
  // GroupNormalization has its three inputs. Returns how many; a scale of
  // unknown shape is a refusal naming the node.
  static size_t zeroBiases(Rewriter& rw, Model& model) {
    std::vector<Node*> lacking;
    model.graph().walkGraphs([&](Graph& g) {
      for (const auto& n : g.nodes())
        if (isDefaultDomain(n->domain()) && n->opType() == "LayerNormalization" && !n->input(2))
          lacking.push_back(n.get());
    });
    for (Node* n : lacking) {
      auto dims = staticShape(n->input(1));
      if (!dims)
        fail(ExitCode::Unsupported, "legalize: " + nodeLabel(*n) +
                                        " has no bias and its scale's shape is not known; "
                                        "PopART's GroupNormalization needs a bias of the scale's shape");
      HostTensor zeros{n->input(1)->type()->tensor_type().elem_type(), *dims, {}};
      zeros.data.assign(static_cast<size_t>(zeros.count()) * elementSize(zeros.type), '\0');
      onnx::AttributeProto value;
      value.set_name("value");
      value.set_type(onnx::AttributeProto::TENSOR);
      *value.mutable_t() = toTensorProto(zeros, "");
      std::string base = (n->name().empty() ? std::string("LayerNormalization") : n->name().str()) + "/zero_bias";
      Node* c = rw.createNode(*n->graph(), n, {base, "Constant", "", {}, {base}});
      rw.setAttribute(c, value);
      rw.setInput(n, 2, c->output(0));
    }
    return lacking.size();
  }

  LegalizeOptions options_;
  PopartVersion version_;
  std::vector<Pattern> patterns_;
  ReplaceOptions replace_;
};

const RegisterPass registration{PassSpec{
    .name = kLegalizePass,
    .summary =
        "Make a model what a target imports (popart: functions inlined, static shapes, opset 11, IR 6, PopART ops)",
    .description =
        "One step from an export to a model the target imports. popart: inline local functions, fix input "
        "shapes, fold shape computations, replace ops PopART lacks (schemas/targets/popart.json), convert to "
        "ai.onnx opset 11 and IR version 6, fold again; refuses (exit 5) while any `validate --target popart` "
        "finding remains. In training mode (the default) every parameter is kept as the export wrote it, and "
        "initializers that are no parameter (integer ones, and float ones --parameters does not name) become "
        "Constants: PopART trains every initializer.",
    .outputTag = "popart",
    .options =
        {
            {.key = "target",
             .flags = "--target",
             .kind = Kind::String,
             .help = "The runtime to legalize for",
             .schema = {{"enum", nlohmann::json::array({"popart"})}},
             .defaultValue = "popart"},
            {.key = "inputs",
             .flags = "--input",
             .kind = Kind::Pairs,
             .help = "An input's whole shape (as set-shapes), needed when an input has a dynamic dimension: "
                     "NAME=D,D,... (repeatable)",
             .schema = {{"type", "object"},
                        {"additionalProperties",
                         {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 1}}}}}},
             .convert = inputShapesFromFlags},
            {.key = "dims",
             .flags = "--dim",
             .kind = Kind::JsonPairs,
             .help = "A symbolic dimension's value in every graph input and declared type that names it (as "
                     "set-shapes): NAME=N (repeatable)",
             .schema = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}, {"minimum", 1}}}}},
            {.key = "gelu",
             .flags = "--gelu",
             .kind = Kind::String,
             .help = "The erf-GELU chain PyTorch writes as ai.graphcore::GeluErf (erf: exact) or ai.graphcore::Gelu "
                     "(tanh: the tanh approximation)",
             .schema = {{"enum", {"erf", "tanh"}}},
             .defaultValue = "erf"},
            {.key = "mode",
             .flags = "--mode",
             .kind = Kind::String,
             .help = "training: every parameter keeps its name, shape and bytes and stays read by its ops (a "
                     "training session trains each one), training-mode Dropout becomes Dropout-10, BatchNormalization "
                     "its five-output training form; inference: ops on weights are folded into new initializers",
             .schema = {{"enum", {"training", "inference"}}},
             .defaultValue = "training"},
            {.key = "popart_version",
             .flags = "--popart-version",
             .kind = Kind::String,
             .help =
                 "The PopART release X.Y to write for (default: the newest graphrw knows); before 3.3 the erf GELU "
                 "stays in ai.onnx ops (PopART has no GeluErf), and any ai.graphcore op newer than X.Y is a finding",
             .schema = {{"type", "string"}, {"pattern", "^[0-9]{1,3}\\.[0-9]{1,3}$"}}},
            {.key = "parameters",
             .flags = "--parameters",
             .kind = Kind::String,
             .help = "Training: a file naming the parameters (a JSON list, or one name a line, as PyTorch's "
                     "named_parameters() gives them); every other float initializer becomes a Constant, but "
                     "BatchNormalization's running statistics. Integer initializers become Constants always",
             .schema = {{"type", "string"}}},
            {.key = "frozen",
             .flags = "--frozen",
             .kind = Kind::Selectors,
             .help = "Training: parameters to freeze, selected by initializer name (name=GLOB, name_regex=RE, "
                     "scope=GLOB; repeat for any-of): they become Constants, which PopART does not train",
             .schema = {{"$ref", "../rules.schema.json#/$defs/selectors"}}},
            {.key = "fold_max_bytes",
             .flags = "--fold-max-bytes",
             .kind = Kind::Integer,
             .help = "Leave folded results over this many bytes alone",
             .schema = {{"type", "integer"}, {"minimum", 0}},
             .defaultValue = kDefaultFoldMaxBytes},
        },
    .examples =
        {
            "graphrw legalize bert.onnx --input input_ids=4,128 --input attention_mask=4,128",
            "graphrw legalize model.onnx --dim batch=4 -o - | graphrw validate - --target popart",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext& rules, const std::string& pointer) {
          LegalizeOptions o;
          if (entry.contains("frozen")) {
            o.frozen = SelectorSet::fromJson(
                entry["frozen"], [&](const std::string& p) { return rules.at(p); }, pointer + "/frozen");
            for (const auto& s : o.frozen.any)
              if (s.opType || s.domain)
                usageError(rules.at(pointer + "/frozen") +
                           ": frozen selects initializers by name: name, name_regex "
                           "or scope, not '" +
                           s.str() + "'");
          }
          if (entry.contains("parameters")) {
            o.parametersFile = entry["parameters"].get<std::string>();
            o.parameters = legalize_detail::readParameterNames((rules.baseDir() / o.parametersFile).string());
          }
          o.target = entry.at("target").get<std::string>();
          if (entry.contains("inputs"))
            for (const auto& [name, dims] : entry["inputs"].items()) o.inputs[name] = dims.get<std::vector<int64_t>>();
          if (entry.contains("dims"))
            for (const auto& [name, value] : entry["dims"].items()) o.dims[name] = value.get<int64_t>();
          o.foldMaxBytes = entry.at("fold_max_bytes").get<uint64_t>();
          o.gelu = entry.at("gelu").get<std::string>();
          o.mode = entry.at("mode").get<std::string>();
          if (entry.contains("popart_version")) o.popartVersion = entry["popart_version"].get<std::string>();
          return createLegalizePass(std::move(o));
        },
}};

}  // namespace

std::unique_ptr<Pass> createLegalizePass(LegalizeOptions options) {
  return std::make_unique<LegalizePass>(std::move(options));
}

}  // namespace graphrw::passes
