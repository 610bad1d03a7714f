#include <onnx/defs/schema.h>
#include <spdlog/spdlog.h>

#include <limits>

#include "analysis/attributes.h"
#include "analysis/extensions.h"
#include "analysis/opsets.h"
#include "analysis/schemas.h"
#include "ir/inliner.h"
#include "passes/replace/replace_internal.h"
#include "support/error.h"
#include "support/json_text.h"

namespace graphrw::passes::replace_detail {

namespace {

std::string arity(int lo, int hi) {
  if (lo == hi) return std::to_string(lo);
  if (hi == std::numeric_limits<int>::max()) return "at least " + std::to_string(lo);
  return "between " + std::to_string(lo) + " and " + std::to_string(hi);
}

// The attribute's value without its name and documentation, for comparison.
std::string valueKey(onnx::AttributeProto a) {
  a.clear_name();
  a.clear_doc_string();
  return a.SerializeAsString();
}

// Whether the node's attribute says what the op does without it (its schema's or function's default).
bool isDefaultValue(const Model& model, const Node& n, const Attribute& a) {
  if (a.isRef() || a.t() || a.g() || !a.tensors().empty() || !a.graphs().empty()) return false;
  auto scope = scopeOpsets(model, *n.graph());
  const std::string domain = isDefaultDomain(n.domain()) ? "" : n.domain();
  if (auto it = scope.find(domain); it != scope.end())
    if (const auto* schema = findSchema(n.opType(), static_cast<int>(it->second), domain)) {
      auto attr = schema->attributes().find(a.name());
      if (attr == schema->attributes().end() || attr->second.required) return false;
      const onnx::AttributeProto& d = attr->second.default_value;
      return d.has_type() && valueKey(d) == valueKey(a.proto());
    }
  if (const Function* fn = model.findFunction(domain, n.opType()))
    for (const auto& d : fn->attributeDefaults())
      if (d.name() == a.name()) return valueKey(d) == valueKey(a.proto());
  return false;  // nothing tells what the op does without it
}

// Whether the target takes an attribute of this name (PopART's `__` ones always).
bool acceptsAttribute(const onnx::OpSchema* schema, const Function* fn, const std::string& name) {
  if (name.starts_with("__")) return true;
  if (schema) return schema->attributes().count(name) > 0;
  if (fn) {
    auto names = fn->attributeNames();
    return std::find(names.begin(), names.end(), name) != names.end();
  }
  return true;  // unknown op: nothing to go by
}

// The target's inputs: as mapped by the rule, else the node's; their count checked against the target.
void planInputs(const Replacement& r, const Node& n, const onnx::OpSchema* schema, const Function* fn,
                const std::string& where, OpPlan& p) {
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
    usageError(where + ": " + displayOp(p.domain, p.opType) + " takes " +
               arity(schema->min_input(), schema->max_input()) + " inputs, the node would give it " +
               std::to_string(given) + " (map them with inputs)");
  if (fn && given > fn->body().inputs().size())
    usageError(where + ": function " + fn->key().str() + " takes " + std::to_string(fn->body().inputs().size()) +
               " inputs, the node would give it " + std::to_string(given));
}

// The target's outputs: as mapped, else the node's; outputs the target lacks go when nothing reads them.
void planOutputs(const Replacement& r, const Node& n, const onnx::OpSchema* schema, const Function* fn,
                 const std::string& where, OpPlan& p) {
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
  // Outputs the target lacks go when nothing reads them (Dropout's mask when it becomes an Identity).
  if (!r.outputs)
    for (size_t k = maxOut; k < p.outputs.size(); ++k)
      if (Value* v = n.output(k); !v || (v->uses().empty() && v->graphOutputCount() == 0)) p.outputs[k] = -1;
  while (p.outputs.size() > maxOut && p.outputs.back() < 0) p.outputs.pop_back();
  if (p.outputs.size() > maxOut && !r.outputs)
    for (size_t k = maxOut; k < p.outputs.size(); ++k)
      if (p.outputs[k] >= 0)
        usageError(where + ": output " + std::to_string(k) + " ('" + n.output(k)->name() + "') is read but " +
                   displayOp(p.domain, p.opType) + " has " + std::to_string(maxOut) + " output" +
                   (maxOut == 1 ? "" : "s") + " (map them with outputs)");
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
    p.freshOutputs.push_back(
        p.outputs[i] < 0 && required ? joinName(n.name().empty() ? p.opType : n.name().str(), formal) : "");
  }
}

// The attributes the rule sets, typed as the target takes them; then every
// attribute the target requires must be there.
void planSets(const Replacement& r, const onnx::OpSchema* schema, const Function* fn, const std::string& where,
              OpPlan& p, std::set<std::string>& present) {
  auto accepts = [&](const std::string& name) { return acceptsAttribute(schema, fn, name); };
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
    if (value.is_array())
      if (auto list = ext::reservedListType(name, p.opType)) expected = list;  // Conv's per-conv `__` lists
    if (expected && *expected == onnx::AttributeProto::GRAPH)
      usageError(where + ": attribute '" + name + "' is a GRAPH; a rule cannot set it");
    auto a = attributeFromJson(name, value, expected, where);
    for (const auto& problem : ext::checkAttribute(a, p.opType)) usageError(where + ": " + problem);
    p.sets.push_back(a);
    present.insert(name);
  }
  if (schema)
    for (const auto& [name, attr] : schema->attributes())
      if (attr.required && !present.count(name))
        usageError(where + ": " + displayOp(p.domain, p.opType) + " requires attribute '" + name + "' (" +
                   attributeTypeName(attr.type) + "); add it with set");
}

// The target's attributes: renamed, kept when it accepts them (with its
// type), dropped when the rule says or their value is the default, set.
void planAttributes(const Model& model, const Replacement& r, const Node& n, const onnx::OpSchema* schema,
                    const Function* fn, const std::string& where, OpPlan& p) {
  auto accepts = [&](const std::string& name) { return acceptsAttribute(schema, fn, name); };
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
  const std::set<std::string> mayDrop(r.drop.begin(), r.drop.end());
  for (const auto& a : n.attributes()) {
    const std::string& target = finalName[a.name()];
    if (mayDrop.count(a.name())) {
      spdlog::debug("replace: {}: attribute '{}' dropped as the rule says", where, a.name());
      p.drop.push_back(a.name());
      continue;
    }
    if (!accepts(target)) {
      if (a.g() || !a.graphs().empty())
        usageError(where + ": attribute '" + a.name() + "' holds a subgraph that " + displayOp(p.domain, p.opType) +
                   " does not take");
      // Dropping an attribute that says what the op's default says changes
      // nothing; dropping any other changes the maths, so the rule must say so.
      if (!isDefaultValue(model, n, a))
        usageError(where + ": attribute '" + a.name() + "' = " + attributeValueText(a.proto()) + " is not " +
                   opName(n) + "'s default and " + displayOp(p.domain, p.opType) +
                   " does not take it; dropping it changes the maths (drop: [\"" + a.name() + "\"] / --drop " +
                   a.name() + " drops it anyway)");
      spdlog::debug("replace: {}: attribute '{}' dropped: {} does not take it (its value is the default)", where,
                    a.name(), displayOp(p.domain, p.opType));
      p.drop.push_back(a.name());
      continue;
    }
    if (!present.insert(target).second)
      usageError(where + ": two of the node's attributes would both be named '" + target + "' (check rename)");
    auto expected = expectedAttributeType(schema, target);
    if (!expected || a.isRef() || a.g() || !a.graphs().empty() || a.t() || *expected == a.type()) continue;
    onnx::AttributeProto proto = a.proto();
    proto.set_name(target);
    auto converted = convertAttribute(proto, *expected);
    if (!converted)
      usageError(where + ": attribute '" + a.name() + "' is " + attributeTypeName(a.type()) + " but " +
                 displayOp(p.domain, p.opType) + " takes '" + target + "' as " + attributeTypeName(*expected));
    p.sets.push_back(*converted);
  }
  planSets(r, schema, fn, where, p, present);
}

}  // namespace

OpPlan ReplaceRun::plan(const Replacement& r, Node& n) {
  std::string where = r.where + ": " + nodeLabel(n);
  const Resolved& t = resolve(r, *n.graph(), where);
  OpPlan p{&n, t.domain, r.opType, t.version, t.importDomain, {}, {}, {}, {}, {}, {}};
  planInputs(r, n, t.schema, t.function, where, p);
  planOutputs(r, n, t.schema, t.function, where, p);
  planAttributes(*model_, r, n, t.schema, t.function, where, p);
  return p;
}

const Resolved& ReplaceRun::resolve(const Replacement& r, Graph& g, const std::string& where) {
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
    if (!t.version) t.version = ext::domainVersion(t.domain).value_or(1);
    t.importDomain = true;
  }
  t.schema = findSchema(r.opType, static_cast<int>(t.version), t.domain);
  t.function = t.schema ? nullptr : model_->findFunction(t.domain, r.opType);
  if (!t.schema && !t.function && !options_.allowUnknownOp)
    usageError(where + ": unknown target op " + displayOp(t.domain, r.opType) + " (opset version " +
               std::to_string(t.version) +
               "): no ONNX schema, no ai.graphcore data, no local function; "
               "--allow-unknown-op / allow_unknown_op writes it anyway");
  return resolved_.emplace(key, std::move(t)).first->second;
}

}  // namespace graphrw::passes::replace_detail
