#include "ir/verifier.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace graphrw {

using namespace ir;

namespace {

std::string nodeLabel(const Node* n) { return "node '" + n->name() + "' (" + opName(*n) + ")"; }

// Values visible in `g` before any node runs: its sources and everything in
// enclosing scopes (whose own ordering is checked in their graph).
bool visibleFromOuterScope(const Graph& g, const Value* v) {
  for (const Graph* p = g.parent(); p != nullptr; p = p->parent())
    if (v->graph() == p) return true;
  return false;
}

}  // namespace

std::vector<Finding> verifyGraph(const Graph& g, const std::string& where) {
  std::vector<Finding> findings;
  auto report = [&](std::string msg) { findings.push_back({where, std::move(msg)}); };

  std::unordered_set<const Value*> defined;
  std::unordered_set<std::string_view> names;  // in the model's NameArena
  // A name is a handle into its model's arena (ir/name.h): one into another
  // model's would dangle once that model goes, so its text is not read here.
  const NameArena& arena = g.model()->nameText();
  bool foreign = false;
  for (size_t i = 0; i < g.values().size(); ++i)
    if (!arena.owns(g.values()[i]->name())) {
      report("value " + std::to_string(i) + " holds a name from outside its model");
      foreign = true;
    }
  size_t k = 0;
  for (const auto& n : g.nodes()) {
    if (!arena.owns(n->name())) {
      report("node " + std::to_string(k) + " holds a name from outside its model");
      foreign = true;
    }
    ++k;
  }
  if (foreign) return findings;
  for (const auto& v : g.values()) {
    if (v->graph() != &g) report("value '" + v->name() + "' is listed in a graph it does not belong to");
    if (!names.insert(v->name()).second) report("value name '" + v->name() + "' is used twice in one scope");
    if (g.findLocal(v->name()) != v.get()) report("value '" + v->name() + "' is missing from the name index");
    if (!g.names().contains(v->name())) report("value '" + v->name() + "' is missing from the name table");
    if (v->isSource()) defined.insert(v.get());
    if (v->producer() && v->producer()->output(static_cast<size_t>(v->producerIndex())) != v.get())
      report("value '" + v->name() + "' names a producer that does not output it");
    for (const Use& u : v->uses()) {
      if (u.node->input(static_cast<size_t>(u.index)) != v.get())
        report("value '" + v->name() + "' lists a use by " + nodeLabel(u.node) + " input " + std::to_string(u.index) +
               " that reads something else");
    }
  }

  for (const auto& node : g.nodes()) {
    const Node* n = node.get();
    if (n->graph() != &g) report(nodeLabel(n) + " does not belong to this graph");
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const Value* v = n->inputs()[i];
      if (!v) continue;
      const auto& uses = v->uses();
      if (std::find(uses.begin(), uses.end(), Use{const_cast<Node*>(n), static_cast<int>(i)}) == uses.end())
        report(nodeLabel(n) + " input " + std::to_string(i) + " ('" + v->name() + "') is missing from its use-list");
      if (v->graph() == &g) {
        if (g.findLocal(v->name()) != v)
          report(nodeLabel(n) + " reads '" + v->name() + "', which was erased");
        else if (!defined.count(v))
          report(nodeLabel(n) + " reads '" + v->name() + "' before it is produced");
      } else if (!visibleFromOuterScope(g, v)) {
        report(nodeLabel(n) + " reads '" + v->name() + "' from a scope it cannot see");
      }
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      const Value* v = n->outputs()[i];
      if (!v) continue;
      if (v->producer() != n || v->producerIndex() != static_cast<int>(i))
        report(nodeLabel(n) + " output " + std::to_string(i) + " ('" + v->name() + "') names another producer");
      if (v->graph() != &g)
        report(nodeLabel(n) + " outputs '" + v->name() + "', a value of another graph");
      else if (!defined.insert(v).second)
        report("value '" + v->name() + "' is produced twice");
    }
  }
  for (const auto& out : g.outputs()) {
    const Value* v = out.value;
    if (v->graph() == &g ? g.findLocal(v->name()) != v : !visibleFromOuterScope(g, v))
      report("graph output '" + v->name() + "' is not a value of this graph");
    else if (v->graph() == &g && !defined.count(v))
      report("graph output '" + v->name() + "' is produced by nothing");
  }
  return findings;
}

std::vector<Finding> verify(Model& model) {
  std::vector<Finding> findings;
  auto add = [&](const Graph& g, const std::string& where) {
    auto f = verifyGraph(g, where);
    findings.insert(findings.end(), f.begin(), f.end());
  };
  std::function<void(const Graph&, const std::string&)> walk = [&](const Graph& g, const std::string& where) {
    add(g, where);
    for (const auto& n : g.nodes())
      for (const auto& a : n->attributes()) {
        if (a.g()) walk(*a.g(), where + " > " + nodeLabel(n.get()) + " attribute '" + a.name() + "'");
        for (size_t i = 0; i < a.graphs().size(); ++i)
          walk(*a.graphs()[i],
               where + " > " + nodeLabel(n.get()) + " attribute '" + a.name() + "'[" + std::to_string(i) + "]");
      }
  };
  walk(model.graph(), "graph '" + model.graph().residual().name() + "'");
  for (const auto& f : model.functions()) walk(f->body(), "function " + f->key().str());
  return findings;
}

std::optional<std::string> findCycle(const Graph& g) {
  // Fast path: already in order (scratch = position + 1, 0 = not yet seen).
  for (const auto& n : g.nodes()) n->scratch = 0;
  bool ordered = true;
  uint64_t position = 0;
  for (const auto& n : g.nodes()) {
    for (const Value* v : n->inputs())
      if (v && v->producer() && v->graph() == &g && v->producer()->scratch == 0) ordered = false;
    if (!ordered) break;
    n->scratch = ++position;
  }
  if (ordered) return std::nullopt;
  // Kahn's algorithm; whatever is left over lies on or behind a cycle.
  std::unordered_map<const Node*, int> pending;
  std::vector<const Node*> ready;
  for (const auto& n : g.nodes()) {
    int count = 0;
    for (const Value* v : n->inputs())
      if (v && v->producer() && v->graph() == &g) ++count;
    pending[n.get()] = count;
    if (count == 0) ready.push_back(n.get());
  }
  while (!ready.empty()) {
    const Node* n = ready.back();
    ready.pop_back();
    for (const Value* out : n->outputs()) {
      if (!out) continue;
      for (const Use& u : out->uses())
        if (u.node->graph() == &g && --pending[u.node] == 0) ready.push_back(u.node);
    }
  }
  // Walk back along unresolved producers from a leftover node until a node repeats.
  const Node* start = nullptr;
  for (const auto& n : g.nodes())
    if (pending[n.get()] > 0) {
      start = n.get();
      break;
    }
  if (!start) return std::nullopt;
  std::vector<const Node*> path;
  std::unordered_map<const Node*, size_t> index;
  const Node* cur = start;
  while (!index.count(cur)) {
    index[cur] = path.size();
    path.push_back(cur);
    const Node* next = nullptr;
    for (const Value* v : cur->inputs())
      if (v && v->producer() && v->graph() == &g && pending[v->producer()] > 0) {
        next = v->producer();
        break;
      }
    if (!next) return std::nullopt;
    cur = next;
  }
  std::string msg = "the graph has a cycle: " + nodeLabel(cur);
  for (size_t i = path.size() - 1; i > index[cur]; --i) msg += " -> " + nodeLabel(path[i]);
  msg += " -> " + nodeLabel(cur);
  return msg;
}

}  // namespace graphrw
