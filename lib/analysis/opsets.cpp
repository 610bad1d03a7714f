#include "analysis/opsets.h"
#include "analysis/schemas.h"

#include <onnx/defs/schema.h>
#include <onnx/version_converter/convert.h>

#include <set>

#include "io/writer.h"
#include "ir/builder.h"
#include "support/error.h"

namespace graphrw {

int64_t newestOpset() {
  const auto& map = domainVersionRanges();
  auto it = map.find("");
  return it == map.end() ? 17 : it->second.second;
}

int64_t irVersionFor(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset == 9) return 4;
  if (opset == 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  return 8;
}

using namespace ir;

namespace {

const onnx::OpSchema* schemaAt(const std::string& op, int64_t version, const std::string& domain) {
  return findSchema(op, static_cast<int>(version), isDefaultDomain(domain) ? "" : domain);
}

void collect(const Graph& g, const std::string& domain, std::set<std::string>& ops) {
  for (const auto& n : g.nodes()) {
    bool same = n->domain() == domain || (isDefaultDomain(n->domain()) && isDefaultDomain(domain));
    if (same) ops.insert(n->opType());
    for (Graph* sub : n->subgraphs()) collect(*sub, domain, ops);
  }
}

}  // namespace

std::vector<std::string> differingOps(const Graph& body, const std::string& domain, int64_t a, int64_t b) {
  std::set<std::string> ops;
  collect(body, domain, ops);
  std::vector<std::string> differ;
  for (const auto& op : ops) {
    const auto* sa = schemaAt(op, a, domain);
    const auto* sb = schemaAt(op, b, domain);
    if (!sa || !sb || sa->SinceVersion() != sb->SinceVersion()) differ.push_back(op);
  }
  return differ;
}

std::map<std::string, int64_t> scopeOpsets(const Model& model, const Graph& graph) {
  if (const Function* f = graph.owningFunction()) return f->opsetImports();
  return model.opsetImports();
}

namespace {
FunctionConverter& registeredConverter() {
  static FunctionConverter converter = nullptr;
  return converter;
}
}  // namespace

void setFunctionConverter(FunctionConverter converter) { registeredConverter() = converter; }

std::unique_ptr<Function> convertFunction(Model& model, const Function& function, int64_t from, int64_t to) {
  if (FunctionConverter converter = registeredConverter()) {
    try {
      return converter(model, function, from, to);
    } catch (const Error& e) {
      fail(e.code(), "function " + function.key().str() + ": converting it from ai.onnx " + std::to_string(from) +
                         " to " + std::to_string(to) + " failed: " + e.what());
    }
  }
  onnx::FunctionProto fp = functionToProto(function);
  onnx::ModelProto mp = functionAsModel(fp, model.irVersion() > 0 ? model.irVersion() : 8, from);
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(mp, static_cast<int>(to));
  } catch (const std::exception& e) {
    badInput("function " + function.key().str() + ": ONNX's version converter cannot convert it from ai.onnx " +
             std::to_string(from) + " to " + std::to_string(to) + ": " + e.what());
  }
  takeConvertedBody(fp, converted, to);
  return buildFunction(model, std::move(fp));
}

onnx::ModelProto functionAsModel(const onnx::FunctionProto& fp, int64_t irVersion, int64_t from) {
  onnx::ModelProto mp;
  mp.set_ir_version(irVersion);
  for (const auto& op : fp.opset_import()) {
    auto* o = mp.add_opset_import();
    *o = op;
    if (isDefaultDomain(op.domain())) o->set_version(from);
  }
  auto* g = mp.mutable_graph();
  g->set_name(fp.name());
  for (const auto& in : fp.input()) g->add_input()->set_name(in);
  for (const auto& out : fp.output()) g->add_output()->set_name(out);
  *g->mutable_node() = fp.node();
  return mp;
}

void takeConvertedBody(onnx::FunctionProto& fp, const onnx::ModelProto& converted, int64_t to) {
  fp.clear_node();
  for (const auto& init : converted.graph().initializer()) {  // constants the adapters added
    auto* c = fp.add_node();
    c->set_op_type("Constant");
    c->add_output(init.name());
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = init;
  }
  for (const auto& n : converted.graph().node()) *fp.add_node() = n;
  for (auto& op : *fp.mutable_opset_import())
    if (isDefaultDomain(op.domain())) op.set_version(to);
}

namespace {

// The functions the nodes of g (and its subgraphs) call, in order of appearance.
std::vector<Function*> calledBy(const Model& model, const Graph& g) {
  std::vector<Function*> out;
  g.walkGraphs([&](const Graph& sub) {
    for (const auto& n : sub.nodes())
      if (Function* f = model.findFunction(n->domain(), n->opType(), n->overload())) out.push_back(f);
  });
  return out;
}

uint64_t saturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

std::vector<Function*> functionsCalleesFirst(const Model& model) {
  std::vector<Function*> order;
  std::set<const Function*> seen;
  for (const auto& root : model.functions()) {
    if (!seen.insert(root.get()).second) continue;
    std::vector<std::pair<Function*, std::vector<Function*>>> stack;
    stack.emplace_back(root.get(), calledBy(model, root->body()));
    while (!stack.empty()) {
      auto& [f, callees] = stack.back();
      if (callees.empty()) {
        order.push_back(f);
        stack.pop_back();
        continue;
      }
      Function* next = callees.back();
      callees.pop_back();
      if (seen.insert(next).second) stack.emplace_back(next, calledBy(model, next->body()));
    }
  }
  return order;
}

uint64_t expandedNodeCount(const Model& model) {
  std::map<const Function*, uint64_t> flat;
  auto count = [&](const Graph& g) {
    uint64_t total = 0;
    g.walkGraphs([&](const Graph& sub) {
      for (const auto& n : sub.nodes()) {
        const Function* f = model.findFunction(n->domain(), n->opType(), n->overload());
        total = saturatingAdd(total, f ? flat[f] : 1);
      }
    });
    return total;
  };
  for (Function* f : functionsCalleesFirst(model)) flat[f] = count(f->body());
  return count(model.graph());
}

size_t callDepth(const Model& model) {
  std::map<const Function*, size_t> depth;  // of the calls below a function's body
  auto below = [&](const Graph& g) {
    size_t d = 0;
    for (const Function* f : calledBy(model, g)) d = std::max(d, depth[f] + 1);
    return d;
  };
  for (Function* f : functionsCalleesFirst(model)) depth[f] = below(f->body());
  return below(model.graph());
}

ModelUsage ModelUsage::of(const ir::Model& model) {
  ModelUsage u;
  model.walkGraphs([&](const ir::Graph& g) {
    for (const auto& n : g.nodes()) u.domains.insert(n->domain());
  });
  std::vector<const ir::Graph*> work{&model.graph()};
  while (!work.empty()) {
    const ir::Graph* g = work.back();
    work.pop_back();
    for (const auto& n : g->nodes()) {
      n->forEachSubgraph([&](ir::Graph& sub) { work.push_back(&sub); });
      if (ir::Function* f = model.findFunction(n->domain(), n->opType(), n->overload()))
        if (u.reachable.insert(f->key()).second) work.push_back(&f->body());
    }
  }
  return u;
}

std::vector<std::string> pruneUnused(ir::Rewriter& rw, const ModelUsage& before) {
  const ir::Model& model = rw.model();
  ModelUsage after = ModelUsage::of(model);
  std::vector<std::string> removed;
  for (const auto& key : before.reachable)
    if (!after.reachable.count(key))
      if (ir::Function* f = model.findFunction(key)) {
        removed.push_back(key.str());
        rw.removeFunction(f);
      }
  if (!removed.empty()) after = ModelUsage::of(model);
  std::vector<std::string> unused;
  for (const auto& op : model.residual().opset_import())
    if (!ir::isDefaultDomain(op.domain()) && before.domains.count(op.domain()) && !after.domains.count(op.domain()))
      unused.push_back(op.domain());
  for (const auto& d : unused) rw.removeOpsetImport(model.graph(), d);
  return removed;
}

}  // namespace graphrw
