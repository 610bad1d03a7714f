#include "passes/replace/replace.h"

#include <onnx/defs/schema.h>
#include <spdlog/spdlog.h>

#include <unordered_set>

#include "analysis/extensions.h"
#include "analysis/opsets.h"
#include "analysis/schemas.h"
#include "ir/builder.h"
#include "ir/inliner.h"
#include "passes/replace/replace_internal.h"
#include "support/error.h"

namespace graphrw::passes {

using namespace ir;

namespace replace_detail {

std::string displayOp(const std::string& domain, const std::string& op) { return domainShown(domain) + "::" + op; }

void ReplaceRun::run(Model& model, PassContext& context) {
  auto before = ModelUsage::of(model);
  nlohmann::json rules = nlohmann::json::array();
  for (const Replacement& r : options_.replacements) {
    auto matches = collect(r);
    if (matches.empty() && !(options_.allowNoMatch && options_.quietNoMatch)) {
      std::string msg = r.where + ": selector '" + r.select.str() + "' matched no node";
      reportNoMatch("replace", msg, options_.allowNoMatch);
    }
    std::map<std::string, size_t> swapped;
    if (r.isTemplate()) {
      const Function& fn = templateFunction(r);
      for (Node* n : matches) checkTemplate(r, fn, *n);
      for (Node* n : matches) {
        swapped[opName(*n) + " -> template " + fn.key().name]++;
        applyTemplate(fn, n);
      }
    } else {
      // Every match is planned (and so checked) before the first edit, then
      // planned again as it is applied: holding every plan at once cost
      // about 300 bytes a match.
      for (Node* n : matches) plan(r, *n);
      for (Node* n : matches) {
        OpPlan p = plan(r, *n);
        swapped[opName(*p.node) + " -> " + displayOp(p.domain, p.opType)]++;
        apply(p);
      }
    }
    matched_ += matches.size();
    nlohmann::json entry = {{"select", r.select.str()}, {"matched", matches.size()}, {"replaced", swapped}};
    rules.push_back(entry);
  }
  size_t dead = removeDead();  // before folding, which erases template nodes
  if (options_.fold) {
    std::erase_if(fromTemplates_, [&](Node* n) { return erasedByTemplates_.count(n) > 0; });
    weights_.fold(fromTemplates_);
  }
  size_t removed = pruneUnusedInitializers(*rw_, weights_.pruneCandidates());
  auto functions = pruneUnused(*rw_, before);
  context.matched = matched_;
  context.details["replacements"] = rules;
  context.details["weights_folded"] = weights_.folded();
  context.details["initializers_created"] = weights_.initializersCreated();
  context.details["initializers_removed"] = removed;
  context.details["dead_nodes_removed"] = dead;
  context.details["functions_removed"] = functions;
}

// Every node any graph holds that the selector matches, nodes inside a matched node's subgraphs excluded.
std::vector<Node*> ReplaceRun::collect(const Replacement& r) {
  std::vector<Node*> found;
  std::unordered_set<const Node*> chosen;
  model_->walkGraphs([&](Graph& g) {
    for (const auto& n : g.nodes())
      if (r.select.matches(*n)) found.push_back(n.get());
  });
  chosen.insert(found.begin(), found.end());
  std::vector<Node*> result;
  for (Node* n : found) {
    bool nested = false;
    for (Graph* g = n->graph(); g && !nested; g = g->parent())
      if (g->parentNode() && chosen.count(g->parentNode())) nested = true;
    if (!nested) result.push_back(n);
  }
  return result;
}

void ReplaceRun::apply(OpPlan& p) {
  Node* n = p.node;
  Graph& g = *n->graph();
  if (p.importDomain) rw_->setOpsetImport(g, p.domain, p.version);
  std::vector<Value*> inputs;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const auto& in = p.inputs[i];
    if (in.kind == ReplaceInput::Kind::Index)
      inputs.push_back(n->input(in.index));
    else if (in.kind == ReplaceInput::Kind::Missing)
      inputs.push_back(nullptr);
    else
      inputs.push_back(weights_.constant(
          g, n, in.constant, joinName(n->name().empty() ? p.opType : n->name().str(), "input_" + std::to_string(i))));
  }
  noteInputs(*n);
  rw_->setOp(n, p.opType, p.domain);
  rw_->setInputs(n, inputs);
  rw_->reshapeOutputs(n, p.outputs, p.freshOutputs);
  for (const auto& name : p.drop) rw_->removeAttribute(n, name);
  for (const auto& [from, to] : p.renames) rw_->renameAttribute(n, from, to);
  for (auto& a : p.sets) rw_->setAttribute(n, a);
}

void ReplaceRun::noteInputs(const Node& n) {
  for (Value* v : n.inputs()) {
    if (!v) continue;
    if (v->isInitializer()) weights_.pruneCandidates().insert(v);
    if (Node* p = v->producer()) maybeDead_.push_back(p);
  }
}

size_t ReplaceRun::removeDead() {
  auto unread = [](const Node& n) {
    if (n.outputs().empty()) return false;
    for (const Value* v : n.outputs())
      if (v && (!v->uses().empty() || v->graphOutputCount() > 0)) return false;
    return true;
  };
  std::unordered_set<const Node*> erased;
  size_t count = 0;
  while (!maybeDead_.empty()) {
    Node* n = maybeDead_.back();
    maybeDead_.pop_back();
    if (erased.count(n) || erasedByTemplates_.count(n) || !unread(*n)) continue;
    noteInputs(*n);
    std::erase(fromTemplates_, n);
    erased.insert(n);
    rw_->eraseNode(n);
    ++count;
  }
  return count;
}

// ---- template replacement ------------------------------------------------
const Function& ReplaceRun::templateFunction(const Replacement& r) {
  auto it = templates_.find(&r);
  if (it != templates_.end()) return *it->second;
  auto fn = buildFunction(*model_, *r.templ);
  return *templates_.emplace(&r, std::move(fn)).first->second;
}

void ReplaceRun::checkTemplate(const Replacement& r, const Function& fn, Node& n) {
  std::string where = r.where + ": " + nodeLabel(n);
  size_t ins = n.inputs().size(), outs = n.outputs().size();
  while (ins > 0 && !n.input(ins - 1)) --ins;
  if (ins > fn.body().inputs().size() || outs > fn.body().outputs().size())
    usageError(where + ": template " + fn.key().name + " takes " + std::to_string(fn.body().inputs().size()) +
               " inputs and " + std::to_string(fn.body().outputs().size()) + " outputs, the node has " +
               std::to_string(ins) + " inputs and " + std::to_string(outs) + " outputs");
  auto scope = scopeOpsets(*model_, *n.graph());
  for (const auto& [domain, version] : fn.opsetImports()) {
    auto it = scope.find(domain);
    if (it == scope.end() || it->second == version) continue;
    auto differ = differingOps(fn.body(), domain, version, it->second);
    if (differ.empty()) continue;
    std::string ops;
    for (const auto& op : differ) ops += (ops.empty() ? "" : ", ") + op;
    usageError(where + ": template " + fn.key().name + " imports " + displayOp(domain, "") + " version " +
               std::to_string(version) + " but the node's scope imports " + std::to_string(it->second) + ", and " +
               ops + " differ between them");
  }
}

void ReplaceRun::applyTemplate(const Function& fn, Node* n) {
  Graph& g = *n->graph();
  for (const auto& [domain, version] : fn.opsetImports())
    if (!scopeOpsets(*model_, g).count(domain)) rw_->setOpsetImport(g, domain, version);
  noteInputs(*n);
  AttributeEnv env = AttributeEnv::of(*n);
  for (auto& d : fn.attributeDefaults()) env.defaults[d.name()] = d;
  // The matched op's own defaults stand for attributes the node leaves out
  // (LayerNormalization's epsilon), so `@epsilon` in a template sees 1e-5.
  auto scope = scopeOpsets(*model_, g);
  if (auto it = scope.find(isDefaultDomain(n->domain()) ? "" : n->domain()); it != scope.end())
    if (const auto* schema = findSchema(n->opType(), static_cast<int>(it->second), it->first))
      for (const auto& [name, attr] : schema->attributes())
        if (!env.defaults.count(name) && (attr.default_value.has_type() || attr.default_value.has_name())) {
          onnx::AttributeProto d = attr.default_value;
          d.set_name(name);
          env.defaults[name] = d;
        }
  std::string prefix = n->name().empty() ? rw_->reserveNodeName(g, n->opType()) : n->name().str();
  erasedByTemplates_.insert(n);  // a node an earlier template created may be replaced in turn
  auto placement = ext::placementOf(*n);
  auto result = inlineBody(*rw_, n, fn.body(), env, prefix);
  ext::applyPlacement(*rw_, result.created, placement);  // template ops run where the node ran
  for (Node* c : result.created) erasedByTemplates_.erase(c);
  fromTemplates_.insert(fromTemplates_.end(), result.created.begin(), result.created.end());
}

}  // namespace replace_detail

namespace {

class ReplacePass final : public Pass {
 public:
  explicit ReplacePass(ReplaceOptions options) : options_(std::move(options)) { ext::registerSchemas(); }
  std::string name() const override { return kReplacePass; }
  void run(Model& model, PassContext& context) const override {
    replace_detail::ReplaceRun(options_, model, context.rewriter).run(model, context);
  }

 private:
  const ReplaceOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createReplacePass(ReplaceOptions options) {
  if (options.replacements.empty()) usageError("replace needs at least one replacement");
  return std::make_unique<ReplacePass>(std::move(options));
}

namespace {

using Kind = OptionSpec::Kind;

// One replacement of the "replacements" list: the JSON Schema of its fields,
// which the command line's --select, --with, ... set on the first one.
const nlohmann::json kReplacementSchema = nlohmann::json::parse(R"json({
  "type": "object",
  "properties": {
    "select": {"$ref": "../rules.schema.json#/$defs/selectors",
        "description": "The nodes to replace (ops, or calls of a local function)."},
    "with": {"type": "string", "pattern": "^(([A-Za-z0-9_.\\-]*)::)?[A-Za-z_][A-Za-z0-9_]*(:[0-9]+)?$",
        "description": "[DOMAIN::]OP[:VERSION], e.g. ai.graphcore::Gelu or Identity."},
    "set": {"type": "object",
        "description": "Attributes to add or override; written with the type the target expects."},
    "drop": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true,
        "description": "Attributes the target does not take that may be dropped although their values differ )json"
                                                                R"json(from the op's default (the maths may change)."},
    "rename": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1},
        "description": "Old attribute name -> new name."},
    "inputs": {
      "type": "array",
      "description": "The target's inputs: the node's input index, null for a missing optional input, or a constant.",
      "items": {
        "oneOf": [
          {"type": "integer", "minimum": 0},
          {"type": "null"},
          {"type": "object", "properties": {
             "constant": {"description": "A number or a (nested) list of numbers."},
             "type": {"enum": ["float", "double", "int64", "int32", "int8", "uint8", "bool"]},
             "dims": {"type": "array", "items": {"type": "integer", "minimum": 0}}
           }, "required": ["constant"], "additionalProperties": false}
        ]
      }
    },
    "outputs": {"type": "array", "items": {"type": "integer", "minimum": -1},
        "description": "New output i takes the node's output outputs[i]; -1: a new unused value."},
    "template": {"type": "string", "minLength": 1,
        "description":
          "A function in ONNX's textual syntax; the node's inputs, outputs and attributes are its formal parameters."},
    "template_file": {"type": "string", "minLength": 1,
        "description": "A file holding the template, relative to the rule file."}
  },
  "required": ["select"],
  "oneOf": [
    {"required": ["with"]},
    {"required": ["template"]},
    {"required": ["template_file"]}
  ],
  "additionalProperties": false
})json");

const RegisterPass registration{PassSpec{
    .name = kReplacePass,
    .summary = "Swap matched ops for another op or a template graph, carrying attributes and weights",
    .description = "Swap matched ops for another op, or for a template graph in ONNX's textual function syntax; "
                   "weight transforms in templates are folded into new initializers.",
    .outputTag = "replaced",
    .options =
        {
            {.key = "replacements",
             .help = "Applied in order; each has a selector and either a target op (with) or a template",
             .schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"$ref", "#/$defs/replacement"}}}},
             .required = true},
            {.flags = "--select",
             .pointer = "/replacements/0/select",
             .kind = Kind::Selectors,
             .help = "Nodes to replace: a selector (key=value,...; repeat for any-of)",
             .required = true},
            {.flags = "--with",
             .pointer = "/replacements/0/with",
             .kind = Kind::String,
             .help = "Target op: [DOMAIN::]OP[:VERSION], e.g. ai.graphcore::Gelu",
             .labels = true,
             .excludes = {"--template"}},
            {.flags = "--template",
             .pointer = "/replacements/0/template_file",
             .kind = Kind::String,
             .help = "Template file: a function in ONNX's textual syntax",
             .labels = true},
            {.flags = "--set",
             .pointer = "/replacements/0/set",
             .kind = Kind::JsonPairs,
             .help = "NAME=VALUE: add or override an attribute (VALUE as JSON, else a string); repeatable",
             .needs = {"--with"}},
            {.flags = "--rename",
             .pointer = "/replacements/0/rename",
             .kind = Kind::Pairs,
             .help = "OLD=NEW: carry attribute OLD over as NEW; repeatable",
             .needs = {"--with"}},
            {.flags = "--drop",
             .pointer = "/replacements/0/drop",
             .kind = Kind::List,
             .help = "NAME: drop attribute NAME, which the target does not take, although its value is not the "
                     "default; repeatable",
             .needs = {"--with"}},
            {.flags = "--inputs",
             .pointer = "/replacements/0/inputs",
             .kind = Kind::Json,
             .help = "JSON list: the node's input index, null, or {\"constant\": ...} per target input",
             .needs = {"--with"}},
            {.flags = "--outputs",
             .pointer = "/replacements/0/outputs",
             .kind = Kind::Json,
             .help = "JSON list: the node's output index per target output (-1: new, unused)",
             .needs = {"--with"}},
            {.key = "allow_unknown_op",
             .flags = "--allow-unknown-op",
             .kind = Kind::Flag,
             .help = "Write a target op that no schema, ai.graphcore data or local function knows",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
            {.key = "allow_no_match",
             .flags = "--allow-no-match",
             .kind = Kind::Flag,
             .help = "A selector matching nothing is a warning, not an error",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
            {.key = "fold",
             .flags = "--no-fold",
             .kind = Kind::NoFlag,
             .help =
                 "Fold template ops that compute only from initializers and constants (--no-fold: keep them as ops)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "keep_parameters",
             .flags = "--keep-parameters",
             .kind = Kind::Flag,
             .help = "Treat initializers as trained parameters: template ops reading them stay ops, and constant "
                     "inputs are Constant nodes, not new initializers",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
        },
    .defs = {{"replacement", kReplacementSchema}},
    .examples =
        {
            "graphrw replace model.onnx --select op_type=Gelu --with ai.graphcore::Gelu",
            "graphrw replace model.onnx --select op_type=Dropout --with Identity --inputs '[0]' --outputs '[0]'",
            "graphrw replace model.onnx --select op_type=CustomLayer --template gemm.onnxtxt",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext& where, const std::string& pointer) {
          return createReplacePass(replaceOptionsFromJson(entry, where, pointer));
        },
}};

}  // namespace

}  // namespace graphrw::passes
