#include "passes/replace/template_check.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "analysis/extensions.h"
#include "analysis/schemas.h"
#include "ir/ir.h"
#include "support/error.h"
#include "support/json_text.h"

namespace graphrw::passes {

namespace {

std::string domainOf(const onnx::NodeProto& n) { return ir::domainKey(n.domain()); }

std::string label(const onnx::NodeProto& n) {
  std::string op = (n.domain().empty() ? "" : n.domain() + ".") + n.op_type();
  return "template node " + (n.name().empty() ? op : "'" + n.name() + "' (" + op + ")");
}

std::string shown(const std::string& name) {
  if (name.size() <= 64) return name;
  std::string head;
  head.reserve(67);
  head.append(name, 0, 64).append("...");
  return head;
}

// The op names of a domain that exist at `version`, for a suggestion.
std::vector<std::string> opsOf(const std::string& domain, int version) {
  std::vector<std::string> ops;
  for (const auto& s : allSchemas())
    if (s.domain() == domain && findSchema(s.Name(), version, domain)) ops.push_back(s.Name());
  return ops;
}

std::string arity(int lo, int hi) {
  if (lo == hi) return std::to_string(lo);
  return hi == std::numeric_limits<int>::max() ? "at least " + std::to_string(lo)
                                               : std::to_string(lo) + " to " + std::to_string(hi);
}

// A match's node: arity and attribute names and types (an absent attribute matches any value).
void checkMatchNode(const onnx::NodeProto& n, const onnx::OpSchema& schema, const std::string& at) {
  if (n.input_size() < schema.min_input() || n.input_size() > schema.max_input())
    usageError(at + ": takes " + arity(schema.min_input(), schema.max_input()) + " inputs, not " +
               std::to_string(n.input_size()));
  if (n.output_size() < schema.min_output() || n.output_size() > schema.max_output())
    usageError(at + ": gives " + arity(schema.min_output(), schema.max_output()) + " outputs, not " +
               std::to_string(n.output_size()));
  for (const auto& a : n.attribute()) {
    auto it = schema.attributes().find(a.name());
    if (it == schema.attributes().end()) {
      std::vector<std::string> names;
      for (const auto& [k, _] : schema.attributes()) names.push_back(k);
      std::string msg = at + ": the op has no attribute '" + shown(a.name()) + "'";
      if (auto near = didYouMean(a.name(), names)) msg += " (did you mean '" + *near + "'?)";
      usageError(msg);
    }
    if (a.ref_attr_name().empty() && it->second.type != onnx::AttributeProto::UNDEFINED && a.type() != it->second.type)
      usageError(at + ": attribute '" + a.name() + "' has the wrong type for the op");
  }
}

void checkOp(const onnx::NodeProto& n, const std::map<std::string, int>& imports, TemplateRole role,
             const std::string& where) {
  std::string at = where + ": " + label(n);
  auto imported = imports.find(domainOf(n));
  if (imported == imports.end())
    usageError(at + ": the template imports no opset for domain '" + ir::domainShown(n.domain()) +
               "' (add it to opset_import)");
  const auto& known = domainVersionRanges();
  if (!known.count(domainOf(n))) return;  // a domain ONNX does not know: nothing to check against
  const onnx::OpSchema* schema = findSchema(n.op_type(), imported->second, domainOf(n));
  if (!schema) {
    std::string msg =
        at + ": no such op in " + ir::domainShown(n.domain()) + " at version " + std::to_string(imported->second);
    if (auto near = didYouMean(n.op_type(), opsOf(domainOf(n), imported->second)))
      msg += " (did you mean '" + *near + "'?)";
    usageError(msg);
  }
  if (role == TemplateRole::Match) return checkMatchNode(n, *schema, at);
  try {
    schema->Verify(n);
  } catch (const onnx::checker::ValidationError& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    if (what.starts_with("Node (")) what = what.substr(what.find(") ") + 2);  // "Node () has input size 1 ..."
    usageError(at + ": " + what);
  }
}

// `@formal` left as a marked string: only inside a subgraph, where parseTemplate does not resolve it.
void refuseNestedReferences(const onnx::GraphProto& g, const std::string& marker, const std::string& where) {
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::STRING && a.s().starts_with(marker))
        usageError(where + ": " + label(n) + ": attribute '" + a.name() + "' = @" + shown(a.s().substr(marker.size())) +
                   " inside a subgraph; references are resolved only on the template's own nodes");
      if (a.has_g()) refuseNestedReferences(a.g(), marker, where);
      for (const auto& sub : a.graphs()) refuseNestedReferences(sub, marker, where);
    }
}

// Tensors (Constant values, ...) whose data disagrees with their dims, at any depth.
void checkTensors(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, const std::string& where) {
  for (const auto& n : nodes)
    for (const auto& a : n.attribute()) {
      if (a.has_t())
        if (auto problem = ir::tensorDataProblem(a.t()))
          usageError(where + ": " + label(n) + ": attribute '" + a.name() + "': " + *problem);
      for (const auto& t : a.tensors())
        if (auto problem = ir::tensorDataProblem(t))
          usageError(where + ": " + label(n) + ": attribute '" + a.name() + "': " + *problem);
      if (a.has_g()) checkTensors(a.g().node(), where);
      for (const auto& g : a.graphs()) checkTensors(g.node(), where);
    }
}

// Every read defined, every value produced once, no cycle, every output produced.
void checkDataflow(const onnx::FunctionProto& fp, const std::string& where) {
  std::set<std::string> inputs(fp.input().begin(), fp.input().end());
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < fp.node_size(); ++i)
    for (const auto& o : fp.node(i).output()) {
      if (o.empty()) continue;
      if (inputs.count(o) || !producer.emplace(o, i).second)
        usageError(where + ": " + label(fp.node(i)) + ": value '" + shown(o) + "' is " +
                   (inputs.count(o) ? "an input of the template" : "produced twice"));
    }
  std::vector<std::vector<int>> readers(static_cast<size_t>(fp.node_size()));
  std::vector<int> pending(static_cast<size_t>(fp.node_size()), 0);
  for (int i = 0; i < fp.node_size(); ++i)
    for (const auto& in : fp.node(i).input()) {
      if (in.empty() || inputs.count(in)) continue;
      auto p = producer.find(in);
      if (p == producer.end())
        usageError(where + ": " + label(fp.node(i)) + " reads '" + shown(in) +
                   "', which is neither an input of the template nor produced by a node");
      readers[static_cast<size_t>(p->second)].push_back(i);
      ++pending[static_cast<size_t>(i)];
    }
  std::vector<int> ready;
  for (int i = 0; i < fp.node_size(); ++i)
    if (pending[static_cast<size_t>(i)] == 0) ready.push_back(i);
  size_t done = 0;
  while (!ready.empty()) {
    int i = ready.back();
    ready.pop_back();
    ++done;
    for (int r : readers[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(r)] == 0) ready.push_back(r);
  }
  if (done != static_cast<size_t>(fp.node_size()))
    for (int i = 0; i < fp.node_size(); ++i)
      if (pending[static_cast<size_t>(i)] > 0)
        usageError(where + ": " + label(fp.node(i)) + " is on a cycle: it reads its own result");
  for (const auto& o : fp.output())
    if (!producer.count(o)) usageError(where + ": the template's output '" + shown(o) + "' is produced by no node");
}

}  // namespace

void checkTemplate(const onnx::FunctionProto& fp, TemplateRole role, const std::string& where,
                   const std::string& marker) {
  ext::registerSchemas();
  std::set<std::string> seen;
  for (const auto& i : fp.input())
    if (!seen.insert(i).second) usageError(where + ": input '" + shown(i) + "' is declared twice");
  std::set<std::string> outputs;
  for (const auto& o : fp.output()) {
    if (!outputs.insert(o).second) usageError(where + ": output '" + shown(o) + "' is declared twice");
    if (seen.count(o))
      usageError(where + ": output '" + shown(o) +
                 "' is also an input; a template's outputs are what its nodes produce "
                 "(write `" +
                 o + "_out = Identity (" + o + ")` to pass it through)");
  }
  std::map<std::string, int> imports;
  for (const auto& op : fp.opset_import()) imports[ir::domainKey(op.domain())] = static_cast<int>(op.version());
  for (const auto& n : fp.node()) {
    checkOp(n, imports, role, where);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) refuseNestedReferences(a.g(), marker, where);
      for (const auto& g : a.graphs()) refuseNestedReferences(g, marker, where);
    }
  }
  checkTensors(fp.node(), where);
  checkDataflow(fp, where);
}

}  // namespace graphrw::passes
