#include "replace.h"

#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "attributes.h"
#include "error.h"
#include "graphcore_ops.h"
#include "inliner.h"
#include "json_schema.h"
#include "loader.h"
#include "opsets.h"
#include "popart.h"

namespace graphrw::passes {

using namespace ir;

namespace {

std::string label(const Node& n) { return "node '" + n.name() + "' (" + opName(n) + ")"; }
std::string displayOp(const std::string& domain, const std::string& op) {
  return (isDefaultDomain(domain) ? std::string("ai.onnx") : domain) + "::" + op;
}

// The graph that holds initializers for `g`: g itself unless it belongs to a function body.
bool canHoldInitializers(Model& model, const Graph& g) { return owningFunction(model, g) == nullptr; }

// What an op replacement will do to one node, decided (and checked) before any edit.
struct OpPlan {
  Node* node;
  std::string domain, opType;
  int64_t version;
  bool importDomain;
  std::vector<ReplaceInput> inputs;
  std::vector<int> outputs;
  std::vector<std::string> freshOutputs;  // names for outputs the target needs and the node has not
  std::vector<std::string> drop;          // attribute names removed
  std::vector<std::pair<std::string, std::string>> renames;
  std::vector<onnx::AttributeProto> sets; // attributes written (converted or set)
};

class ReplacePass final : public Pass {
 public:
  explicit ReplacePass(ReplaceOptions options) : options_(std::move(options)) { registerGraphcoreOps(); }
  std::string name() const override { return "replace"; }

  void run(Model& model, PassContext& context) override {
    model_ = &model;
    rw_ = &context.rewriter;
    auto before = ModelUsage::of(model);
    nlohmann::json rules = nlohmann::json::array();
    for (const Replacement& r : options_.replacements) {
      auto matches = collect(r);
      if (matches.empty()) {
        std::string msg = r.where + ": selector '" + r.select.str() + "' matched no node";
        if (!options_.allowNoMatch) usageError(msg + " (allow_no_match / --allow-no-match makes this a warning)");
        spdlog::warn("replace: {}", msg);
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
        std::vector<OpPlan> plans;
        for (Node* n : matches) plans.push_back(plan(r, *n));
        for (auto& p : plans) {
          swapped[opName(*p.node) + " -> " + displayOp(p.domain, p.opType)]++;
          apply(p);
        }
      }
      matched_ += matches.size();
      nlohmann::json entry = {{"select", r.select.str()}, {"matched", matches.size()}, {"replaced", swapped}};
      rules.push_back(entry);
    }
    if (options_.fold) foldWeights();
    size_t removed = removeDanglingInitializers();
    auto functions = pruneUnused(model, before);
    context.matched = matched_;
    context.details["replacements"] = rules;
    context.details["weights_folded"] = folded_;
    context.details["initializers_created"] = created_;
    context.details["initializers_removed"] = removed;
    context.details["functions_removed"] = functions;
  }

 private:
  // Every node any graph holds that the selector matches, nodes inside a matched node's subgraphs excluded.
  std::vector<Node*> collect(const Replacement& r) {
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

  // ---- op replacement ------------------------------------------------------
  OpPlan plan(const Replacement& r, Node& n) {
    std::string where = r.where + ": " + label(n);
    const Resolved& t = resolve(r, *n.graph(), where);
    OpPlan p{&n, t.domain, r.opType, t.version, t.importDomain, {}, {}, {}, {}, {}, {}};
    const onnx::OpSchema* schema = t.schema;
    const Function* fn = t.function;

    // Inputs.
    if (r.inputs) {
      p.inputs = *r.inputs;
      for (const auto& in : p.inputs)
        if (in.kind == ReplaceInput::Kind::Index && in.index >= n.inputs().size())
          usageError(where + ": inputs refers to input " + std::to_string(in.index) + " but the node has " +
                     std::to_string(n.inputs().size()));
    } else {
      for (size_t i = 0; i < n.inputs().size(); ++i)
        p.inputs.push_back(n.input(i) ? ReplaceInput{ReplaceInput::Kind::Index, i, {}}
                                      : ReplaceInput{ReplaceInput::Kind::Missing, 0, {}});
    }
    while (!p.inputs.empty() && p.inputs.back().kind == ReplaceInput::Kind::Missing) p.inputs.pop_back();
    size_t given = p.inputs.size();
    if (schema && (given < static_cast<size_t>(schema->min_input()) || given > static_cast<size_t>(schema->max_input())))
      usageError(where + ": " + displayOp(p.domain, p.opType) + " takes " + arity(schema->min_input(), schema->max_input()) +
                 " inputs, the node would give it " + std::to_string(given) + " (map them with inputs)");
    if (fn && given > fn->body().inputs().size())
      usageError(where + ": function " + fn->key().str() + " takes " + std::to_string(fn->body().inputs().size()) +
                 " inputs, the node would give it " + std::to_string(given));

    // Outputs.
    if (r.outputs) {
      p.outputs = *r.outputs;
      for (int k : p.outputs)
        if (k >= static_cast<int>(n.outputs().size()))
          usageError(where + ": outputs refers to output " + std::to_string(k) + " but the node has " +
                     std::to_string(n.outputs().size()));
    } else {
      for (size_t i = 0; i < n.outputs().size(); ++i) p.outputs.push_back(n.output(i) ? static_cast<int>(i) : -1);
    }
    size_t minOut = schema ? static_cast<size_t>(schema->min_output()) : 0;
    size_t maxOut = schema ? static_cast<size_t>(schema->max_output()) : fn ? fn->body().outputs().size() : SIZE_MAX;
    while (p.outputs.size() < minOut) p.outputs.push_back(-1);
    while (p.outputs.size() > maxOut && p.outputs.back() < 0) p.outputs.pop_back();
    if (p.outputs.size() > maxOut)
      usageError(where + ": " + displayOp(p.domain, p.opType) + " has at most " + std::to_string(maxOut) +
                 " outputs, the node's outputs map to " + std::to_string(p.outputs.size()) + " (map them with outputs)");
    std::set<int> mapped(p.outputs.begin(), p.outputs.end());
    for (size_t k = 0; k < n.outputs().size(); ++k) {
      Value* v = n.output(k);
      if (v && !mapped.count(static_cast<int>(k)) && (!v->uses().empty() || v->graphOutputCount() > 0))
        usageError(where + ": output " + std::to_string(k) + " ('" + v->name() + "') is used but maps to no output of " +
                   displayOp(p.domain, p.opType));
    }
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      std::string formal = schema && !schema->outputs().empty()
                               ? schema->outputs()[std::min(i, schema->outputs().size() - 1)].GetName()
                               : "output_" + std::to_string(i);
      bool required = schema && i < static_cast<size_t>(schema->min_output());
      p.freshOutputs.push_back(p.outputs[i] < 0 && required ? joinName(n.name().empty() ? p.opType : n.name(), formal) : "");
    }

    // Attributes: rename, keep what the target accepts (with its type), set, check required ones.
    auto accepts = [&](const std::string& name) {
      if (name.rfind("__", 0) == 0) return true;
      if (schema) return schema->attributes().count(name) > 0;
      if (fn) {
        auto names = fn->attributeNames();
        return std::find(names.begin(), names.end(), name) != names.end();
      }
      return true;  // unknown op: nothing to go by
    };
    std::map<std::string, std::string> finalName;  // current name -> name on the target
    for (const auto& a : n.attributes()) finalName[a.name()] = a.name();
    for (const auto& [from, to] : r.rename) {
      if (!finalName.count(from)) {
        spdlog::debug("replace: {}: rename '{}': the node has no such attribute", where, from);
        continue;
      }
      finalName[from] = to;
      p.renames.emplace_back(from, to);
    }
    std::set<std::string> present;
    for (const auto& a : n.attributes()) {
      const std::string& target = finalName[a.name()];
      if (!accepts(target)) {
        if (a.g || !a.graphs.empty())
          usageError(where + ": attribute '" + a.name() + "' holds a subgraph that " + displayOp(p.domain, p.opType) +
                     " does not take");
        spdlog::debug("replace: {}: attribute '{}' dropped: {} does not take it", where, a.name(), displayOp(p.domain, p.opType));
        p.drop.push_back(a.name());
        continue;
      }
      if (!present.insert(target).second)
        usageError(where + ": two of the node's attributes would both be named '" + target + "' (check rename)");
      auto expected = expectedAttributeType(schema, target);
      if (!expected || a.isRef() || a.g || !a.graphs.empty() || a.t || *expected == a.type()) continue;
      onnx::AttributeProto proto = a.proto;
      proto.set_name(target);
      auto converted = convertAttribute(proto, *expected);
      if (!converted)
        usageError(where + ": attribute '" + a.name() + "' is " + attributeTypeName(a.type()) + " but " +
                   displayOp(p.domain, p.opType) + " takes '" + target + "' as " + attributeTypeName(*expected));
      p.sets.push_back(*converted);
    }
    for (const auto& [name, value] : r.set) {
      if (!accepts(name)) {
        std::vector<std::string> known;
        if (schema)
          for (const auto& [k, _] : schema->attributes()) known.push_back(k);
        std::string msg = where + ": " + displayOp(p.domain, p.opType) + " has no attribute '" + name + "'";
        if (auto near = didYouMean(name, known)) msg += " (did you mean '" + *near + "'?)";
        usageError(msg);
      }
      auto expected = expectedAttributeType(schema, name);
      if (expected && *expected == onnx::AttributeProto::GRAPH)
        usageError(where + ": attribute '" + name + "' is a GRAPH; a rule cannot set it");
      auto a = attributeFromJson(name, value, expected, where);
      for (const auto& problem : popart::checkAttribute(a)) usageError(where + ": " + problem);
      p.sets.push_back(a);
      present.insert(name);
    }
    if (schema)
      for (const auto& [name, attr] : schema->attributes())
        if (attr.required && !present.count(name))
          usageError(where + ": " + displayOp(p.domain, p.opType) + " requires attribute '" + name + "' (" +
                     attributeTypeName(attr.type) + "); add it with set");
    return p;
  }

  // The target op as seen from one scope, worked out once per (replacement, graph).
  struct Resolved {
    std::string domain;
    int64_t version = 0;
    bool importDomain = false;
    const onnx::OpSchema* schema = nullptr;
    const Function* function = nullptr;
  };
  const Resolved& resolve(const Replacement& r, Graph& g, const std::string& where) {
    auto key = std::make_pair(&r, &g);
    if (auto it = resolved_.find(key); it != resolved_.end()) return it->second;
    auto scope = scopeOpsets(*model_, g);
    Resolved t;
    t.domain = isDefaultDomain(r.domain) ? "" : r.domain;
    t.version = r.version;
    auto imported = scope.find(t.domain);
    if (imported != scope.end()) {
      if (t.version && t.version != imported->second)
        usageError(where + ": the target asks for " + displayOp(t.domain, "") + " version " + std::to_string(t.version) +
                   " but the node's scope imports version " + std::to_string(imported->second));
      t.version = imported->second;
    } else {
      if (!t.version) t.version = t.domain == "ai.graphcore" ? graphcoreOpsData()["version"].get<int64_t>() : 1;
      t.importDomain = true;
    }
    t.schema = onnx::OpSchemaRegistry::Schema(r.opType, static_cast<int>(t.version), t.domain);
    t.function = t.schema ? nullptr : model_->findFunction(t.domain, r.opType);
    if (!t.schema && !t.function && !options_.allowUnknownOp)
      usageError(where + ": unknown target op " + displayOp(t.domain, r.opType) + " (opset version " +
                 std::to_string(t.version) + "): no ONNX schema, no ai.graphcore data, no local function; "
                 "--allow-unknown-op / allow_unknown_op writes it anyway");
    return resolved_.emplace(key, std::move(t)).first->second;
  }

  static std::string arity(int lo, int hi) {
    if (lo == hi) return std::to_string(lo);
    if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo);
    return "between " + std::to_string(lo) + " and " + std::to_string(hi);
  }

  void apply(OpPlan& p) {
    Node* n = p.node;
    Graph& g = *n->graph();
    if (p.importDomain) setScopeOpset(*model_, g, p.domain, p.version);
    std::vector<Value*> inputs;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const auto& in = p.inputs[i];
      if (in.kind == ReplaceInput::Kind::Index) inputs.push_back(n->input(in.index));
      else if (in.kind == ReplaceInput::Kind::Missing) inputs.push_back(nullptr);
      else inputs.push_back(constant(g, n, in.constant, joinName(n->name().empty() ? p.opType : n->name(), "input_" + std::to_string(i))));
    }
    for (Value* v : n->inputs())
      if (v && v->isInitializer()) dangling_.insert(v);
    rw_->setOp(n, p.opType, p.domain);
    rw_->setInputs(n, inputs);
    rw_->reshapeOutputs(n, p.outputs, p.freshOutputs);
    for (const auto& name : p.drop) rw_->removeAttribute(n, name);
    for (const auto& [from, to] : p.renames) rw_->renameAttribute(n, from, to);
    for (auto& a : p.sets) rw_->setAttribute(n, a);
  }

  // A constant input: an initializer where the graph can hold one, else a Constant node.
  Value* constant(Graph& g, Node* before, const HostTensor& t, const std::string& name) {
    if (canHoldInitializers(*model_, g)) {
      Value* v = g.addFreshValue(name);
      g.addInitializer(v, std::make_unique<Tensor>(toTensorProto(t, v->name())));  // its type comes from the tensor
      created_++;
      return v;
    }
    Node* c = rw_->createNode(g, before, {name, "Constant", "", {}, {name}});
    onnx::AttributeProto value;
    value.set_name("value");
    value.set_type(onnx::AttributeProto::TENSOR);
    *value.mutable_t() = toTensorProto(t, "");
    rw_->setAttribute(c, value);
    return c->output(0);
  }

  // ---- template replacement ------------------------------------------------
  const Function& templateFunction(const Replacement& r) {
    auto it = templates_.find(&r);
    if (it != templates_.end()) return *it->second;
    auto fn = buildFunction(*model_, *r.templ);
    return *templates_.emplace(&r, std::move(fn)).first->second;
  }

  void checkTemplate(const Replacement& r, const Function& fn, Node& n) {
    std::string where = r.where + ": " + label(n);
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

  void applyTemplate(const Function& fn, Node* n) {
    Graph& g = *n->graph();
    for (const auto& [domain, version] : fn.opsetImports())
      if (!scopeOpsets(*model_, g).count(domain)) setScopeOpset(*model_, g, domain, version);
    for (Value* v : n->inputs())
      if (v && v->isInitializer()) dangling_.insert(v);
    AttributeEnv env = AttributeEnv::of(*n);
    for (auto& d : fn.attributeDefaults()) env.defaults[d.name()] = d;
    // The matched op's own defaults stand for attributes the node leaves out
    // (LayerNormalization's epsilon), so `@epsilon` in a template sees 1e-5.
    auto scope = scopeOpsets(*model_, g);
    if (auto it = scope.find(isDefaultDomain(n->domain()) ? "" : n->domain()); it != scope.end())
      if (const auto* schema = onnx::OpSchemaRegistry::Schema(n->opType(), static_cast<int>(it->second), it->first))
        for (const auto& [name, attr] : schema->attributes())
          if (!env.defaults.count(name) && (attr.default_value.has_type() || attr.default_value.has_name())) {
            onnx::AttributeProto d = attr.default_value;
            d.set_name(name);
            env.defaults[name] = d;
          }
    std::string prefix = n->name().empty() ? g.nodeNames().fresh(n->opType()) : n->name();
    erasedByTemplates_.insert(n);  // a node an earlier template created may be replaced in turn
    auto result = inlineBody(*rw_, n, fn.body(), env, prefix);
    for (Node* c : result.created) erasedByTemplates_.erase(c);
    fromTemplates_.insert(fromTemplates_.end(), result.created.begin(), result.created.end());
  }

  // ---- weight folding ------------------------------------------------------
  const HostTensor* constantValue(Value* v) {
    if (!v) return nullptr;
    if (auto it = hostCache_.find(v); it != hostCache_.end()) return &it->second;
    if (v->isInitializer()) return &hostCache_.emplace(v, readTensor(*v->initializer())).first->second;
    Node* p = v->producer();
    if (!p || p->opType() != "Constant" || !isDefaultDomain(p->domain()) || p->attributes().size() != 1) return nullptr;
    const Attribute& a = p->attributes()[0];
    if (a.name() == "value" && a.t) return &hostCache_.emplace(v, readTensor(*a.t)).first->second;
    HostTensor t;
    auto put = [&](auto value) {
      size_t at = t.data.size();
      t.data.resize(at + sizeof(value));
      std::memcpy(t.data.data() + at, &value, sizeof(value));
    };
    if (a.name() == "value_float") {
      t.type = onnx::TensorProto::FLOAT;
      put(a.proto.f());
    } else if (a.name() == "value_int") {
      t.type = onnx::TensorProto::INT64;
      put(a.proto.i());
    } else if (a.name() == "value_floats") {
      t.type = onnx::TensorProto::FLOAT;
      t.dims = {a.proto.floats_size()};
      for (float f : a.proto.floats()) put(f);
    } else if (a.name() == "value_ints") {
      t.type = onnx::TensorProto::INT64;
      t.dims = {a.proto.ints_size()};
      for (int64_t i : a.proto.ints()) put(i);
    } else {
      return nullptr;
    }
    return &hostCache_.emplace(v, std::move(t)).first->second;
  }

  void foldWeights() {
    std::erase_if(fromTemplates_, [&](Node* n) { return erasedByTemplates_.count(n) > 0; });
    std::unordered_set<Node*> done;
    for (Node* n : fromTemplates_) {
      if (!isFoldable(*n)) continue;
      Graph& g = *n->graph();
      if (!canHoldInitializers(*model_, g)) continue;
      std::vector<const HostTensor*> inputs;
      bool allConstant = true;
      for (Value* v : n->inputs()) {
        if (!v) {
          inputs.push_back(nullptr);
          continue;
        }
        const HostTensor* t = constantValue(v);
        if (!t) {
          allConstant = false;
          break;
        }
        inputs.push_back(t);
      }
      if (!allConstant || n->inputs().empty()) continue;
      std::string key = foldKey(*n);
      auto memo = memo_.find(key);
      std::vector<Value*> results;
      if (memo != memo_.end()) {
        results = memo->second;
      } else {
        std::string why;
        auto outs = evaluate(*n, inputs, why);
        if (!outs) {
          spdlog::debug("replace: {} not folded: {}", label(*n), why);
          continue;
        }
        for (size_t i = 0; i < outs->size() && i < n->outputs().size(); ++i) {
          Value* out = n->output(i);
          if (!out) {
            results.push_back(nullptr);
            continue;
          }
          std::string name = out->name();
          rw_->renameValue(out, name + "/folded");
          results.push_back(constant(g, n, (*outs)[i], name));
          hostCache_.emplace(results.back(), std::move((*outs)[i]));
        }
        memo_[key] = results;
      }
      for (size_t i = 0; i < n->outputs().size(); ++i)
        if (Value* out = n->output(i)) {
          if (i >= results.size() || !results[i]) continue;
          rw_->replaceAllUsesWith(out, results[i], /*graphOutputs=*/true);
        }
      for (Value* v : n->inputs())
        if (v && v->isInitializer()) dangling_.insert(v);
      // Erased after the loop: values (and so the keys of the caches) stay put while folding.
      done.insert(n);
      folded_++;
    }
    // Folded nodes, then the template Constants only they read, last first.
    for (auto it = fromTemplates_.rbegin(); it != fromTemplates_.rend(); ++it) {
      Node* n = *it;
      if (!done.count(n) && !(n->opType() == "Constant" && isDefaultDomain(n->domain()))) continue;
      bool unused = true;
      for (Value* v : n->outputs())
        if (v && (!v->uses().empty() || v->graphOutputCount() > 0)) unused = false;
      if (!unused) continue;
      rw_->eraseNode(n);
    }
    hostCache_.clear();
    memo_.clear();
  }

  // Same op, same attributes, same input values, same graph: the same result.
  std::string foldKey(const Node& n) {
    std::string key = n.opType() + "|" + std::to_string(reinterpret_cast<uintptr_t>(n.graph()));
    for (const auto& a : n.attributes()) key += "|" + a.proto.SerializeAsString();
    for (Value* v : n.inputs()) key += "|" + std::to_string(reinterpret_cast<uintptr_t>(v));
    key += "|" + std::to_string(n.outputs().size());
    return key;
  }

  size_t removeDanglingInitializers() {
    size_t removed = 0;
    for (Value* v : dangling_) {
      if (!v->isInitializer() || !v->uses().empty() || v->graphOutputCount() > 0 || v->isGraphInput()) continue;
      v->graph()->eraseValue(v);
      removed++;
    }
    return removed;
  }

  ReplaceOptions options_;
  Model* model_ = nullptr;
  Rewriter* rw_ = nullptr;
  size_t matched_ = 0, folded_ = 0, created_ = 0;
  std::map<const Replacement*, std::unique_ptr<Function>> templates_;
  std::map<std::pair<const Replacement*, const Graph*>, Resolved> resolved_;
  std::vector<Node*> fromTemplates_;
  std::unordered_set<Node*> erasedByTemplates_;
  std::unordered_map<const Value*, HostTensor> hostCache_;
  std::map<std::string, std::vector<Value*>> memo_;
  std::set<Value*> dangling_;
};

int32_t dataTypeFromName(const std::string& name, const std::string& where) {
  static const std::map<std::string, int32_t> types = {
      {"float", onnx::TensorProto::FLOAT}, {"double", onnx::TensorProto::DOUBLE}, {"int64", onnx::TensorProto::INT64},
      {"int32", onnx::TensorProto::INT32}, {"int8", onnx::TensorProto::INT8},     {"uint8", onnx::TensorProto::UINT8},
      {"bool", onnx::TensorProto::BOOL}};
  auto it = types.find(name);
  if (it == types.end()) usageError(where + ": constant type '" + name + "' is not one of float, double, int64, int32, int8, uint8, bool");
  return it->second;
}

}  // namespace

void parseTarget(const std::string& text, Replacement& r) {
  static const std::regex form(R"(^(?:([A-Za-z0-9_.\-]*)::)?([A-Za-z_][A-Za-z0-9_]*)(?::([0-9]+))?$)");
  std::smatch m;
  if (!std::regex_match(text, m, form)) usageError("replacement target '" + text + "': expected [DOMAIN::]OP[:VERSION]");
  r.domain = m[1].str();
  if (r.domain == "ai.onnx") r.domain.clear();
  r.opType = m[2].str();
  r.version = m[3].matched ? std::stoll(m[3].str()) : 0;
}

onnx::FunctionProto parseTemplate(const std::string& text, const std::string& where) {
  // ONNX 1.12's parser has no attribute references: `name = @formal` is read
  // as a marked string and turned into a reference once the op's schema gives its type.
  static const std::regex ref(R"(([A-Za-z_][A-Za-z0-9_]*)\s*=\s*@([A-Za-z_][A-Za-z0-9_]*))");
  const std::string marker = "@graphrw-ref@";
  std::string prepared = std::regex_replace(text, ref, "$1 = \"" + marker + "$2\"");
  onnx::FunctionProto fp;
  auto status = onnx::OnnxParser::Parse(fp, prepared.c_str());
  if (!status.IsOK()) {
    std::string msg = status.ErrorMessage();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    usageError(where + ": the template does not parse: " + msg);
  }
  if (fp.name().empty()) usageError(where + ": the template has no name");
  if (fp.domain().empty()) fp.set_domain("graphrw.template");
  std::map<std::string, int64_t> opsets;
  for (const auto& op : fp.opset_import()) opsets[op.domain()] = op.version();
  for (auto& node : *fp.mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.type() != onnx::AttributeProto::STRING || a.s().rfind(marker, 0) != 0) continue;
      std::string formal = a.s().substr(marker.size());
      auto version = opsets.count(node.domain()) ? opsets[node.domain()] : onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(node.domain().empty() ? "" : node.domain()).second;
      const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(version), node.domain());
      auto type = expectedAttributeType(schema, a.name());
      if (!type)
        usageError(where + ": template node " + node.op_type() + ": attribute '" + a.name() + "' = @" + formal +
                   ": the op's schema does not give this attribute a type");
      a.clear_s();
      a.set_type(*type);
      a.set_ref_attr_name(formal);
    }
  }
  return fp;
}

ReplaceInput constantInput(const nlohmann::json& j, const std::string& where) {
  ReplaceInput in;
  in.kind = ReplaceInput::Kind::Constant;
  const auto& value = j.at("constant");
  std::vector<int64_t> shape;
  std::vector<double> flat;
  std::function<void(const nlohmann::json&, size_t)> walk = [&](const nlohmann::json& v, size_t depth) {
    if (v.is_array()) {
      if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(v.size()));
      else if (shape[depth] != static_cast<int64_t>(v.size())) usageError(where + ": the constant's nested lists are ragged");
      for (const auto& x : v) walk(x, depth + 1);
    } else if (v.is_number() || v.is_boolean()) {
      flat.push_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
    } else {
      usageError(where + ": a constant holds numbers");
    }
  };
  walk(value, 0);
  bool allIntegral = std::all_of(flat.begin(), flat.end(), [](double d) { return std::floor(d) == d; }) &&
                     !j.at("constant").dump().empty() && j.at("constant").dump().find('.') == std::string::npos;
  std::string type = j.value("type", allIntegral ? "int64" : "float");
  in.constant.type = dataTypeFromName(type, where);
  in.constant.dims = j.contains("dims") ? j["dims"].get<std::vector<int64_t>>() : shape;
  if (in.constant.count() != static_cast<int64_t>(flat.size()))
    usageError(where + ": dims hold " + std::to_string(in.constant.count()) + " elements, the constant " + std::to_string(flat.size()));
  size_t es = elementSize(in.constant.type);
  in.constant.data.resize(flat.size() * es);
  for (size_t i = 0; i < flat.size(); ++i) {
    char* p = in.constant.data.data() + i * es;
    switch (in.constant.type) {
      case onnx::TensorProto::FLOAT: { float v = static_cast<float>(flat[i]); std::memcpy(p, &v, es); break; }
      case onnx::TensorProto::DOUBLE: std::memcpy(p, &flat[i], es); break;
      case onnx::TensorProto::INT64: { int64_t v = static_cast<int64_t>(flat[i]); std::memcpy(p, &v, es); break; }
      case onnx::TensorProto::INT32: { int32_t v = static_cast<int32_t>(flat[i]); std::memcpy(p, &v, es); break; }
      case onnx::TensorProto::INT8: { int8_t v = static_cast<int8_t>(flat[i]); std::memcpy(p, &v, es); break; }
      default: { uint8_t v = static_cast<uint8_t>(flat[i]); std::memcpy(p, &v, es); break; }
    }
  }
  return in;
}

std::vector<ReplaceInput> inputsFromJson(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) usageError(where + ": inputs must be a list");
  std::vector<ReplaceInput> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& x = j[i];
    std::string at = where + "/" + std::to_string(i);
    if (x.is_null()) out.push_back({ReplaceInput::Kind::Missing, 0, {}});
    else if (x.is_number_unsigned() || (x.is_number_integer() && x.get<int64_t>() >= 0))
      out.push_back({ReplaceInput::Kind::Index, x.get<size_t>(), {}});
    else if (x.is_object() && x.contains("constant")) out.push_back(constantInput(x, at));
    else usageError(at + ": an input is the node's input index, null (missing) or {\"constant\": ...}");
  }
  return out;
}

ReplaceOptions replaceOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer) {
  ReplaceOptions o;
  auto at = [&](const std::string& p) { return rules.at(p); };
  o.allowUnknownOp = j.value("allow_unknown_op", false);
  o.allowNoMatch = j.value("allow_no_match", false);
  o.fold = j.value("fold", true);
  const auto& list = j["replacements"];
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    std::string p = pointer + "/replacements/" + std::to_string(i);
    Replacement r;
    r.where = rules.at(p);
    r.select = SelectorSet::fromJson(e["select"], at, p + "/select");
    if (e.contains("with")) {
      try {
        parseTarget(e["with"].get<std::string>(), r);
      } catch (const Error& err) {
        usageError(rules.at(p + "/with") + ": " + err.what());
      }
      if (e.contains("set"))
        for (const auto& [k, v] : e["set"].items()) r.set.emplace_back(k, v);
      if (e.contains("rename"))
        for (const auto& [k, v] : e["rename"].items()) r.rename.emplace_back(k, v.get<std::string>());
      if (e.contains("inputs")) r.inputs = inputsFromJson(e["inputs"], rules.at(p + "/inputs"));
      if (e.contains("outputs")) r.outputs = e["outputs"].get<std::vector<int>>();
    } else {
      for (const char* key : {"set", "rename", "inputs", "outputs"})
        if (e.contains(key)) usageError(rules.at(p + "/" + key) + ": only an op replacement (with) takes " + key + "; a template gets the node's inputs, outputs and attributes as its formal parameters");
      std::string text;
      if (e.contains("template")) {
        text = e["template"].get<std::string>();
      } else {
        std::filesystem::path file = e["template_file"].get<std::string>();
        if (file.is_relative()) file = std::filesystem::path(rules.file).parent_path() / file;
        text = readRulesText(file.string());
      }
      r.templ = parseTemplate(text, rules.at(p + (e.contains("template") ? "/template" : "/template_file")));
    }
    o.replacements.push_back(std::move(r));
  }
  return o;
}

std::unique_ptr<Pass> createReplacePass(ReplaceOptions options) {
  if (options.replacements.empty()) usageError("replace needs at least one replacement");
  // Attributes are written in name order whichever way they were given (a rule
  // file's object has no order), so a command and its rule file agree byte for byte.
  for (auto& r : options.replacements)
    std::stable_sort(r.set.begin(), r.set.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return std::make_unique<ReplacePass>(std::move(options));
}

}  // namespace graphrw::passes
