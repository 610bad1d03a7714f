#include "pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "builder.h"
#include "error.h"
#include "fold.h"
#include "inliner.h"
#include "popart.h"

namespace graphrw {

using namespace ir;

namespace {

bool sameDomain(const std::string& a, const std::string& b) {
  auto norm = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
  return norm(a) == norm(b);
}

bool commutative(const std::string& domain, const std::string& op) {
  return sameDomain(domain, "") && (op == "Add" || op == "Mul");
}

// The elements as doubles, for the numeric types constants come in.
std::optional<std::vector<double>> numbers(const HostTensor& t) {
  std::vector<double> out;
  size_t n = static_cast<size_t>(t.count());
  auto read = [&](auto zero) {
    using T = decltype(zero);
    if (t.data.size() < n * sizeof(T)) return false;
    for (size_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, t.data.data() + i * sizeof(T), sizeof(T));
      out.push_back(static_cast<double>(v));
    }
    return true;
  };
  bool ok = false;
  switch (t.type) {
    case onnx::TensorProto::FLOAT: ok = read(float{}); break;
    case onnx::TensorProto::DOUBLE: ok = read(double{}); break;
    case onnx::TensorProto::INT32: ok = read(int32_t{}); break;
    case onnx::TensorProto::INT64: ok = read(int64_t{}); break;
    default: return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return out;
}

// Whether the graph's constant `t` is the pattern's constant `p`: same
// element type, same values to a relative 1e-6; one element matches one
// element whatever the shapes ([] and [1]).
bool sameConstant(const HostTensor& p, const HostTensor& t) {
  if (p.type != t.type) return false;
  if (!(p.count() == 1 && t.count() == 1) && p.dims != t.dims) return false;
  auto a = numbers(p), b = numbers(t);
  if (!a || !b) return p.data == t.data;
  if (a->size() != b->size()) return false;
  for (size_t i = 0; i < a->size(); ++i) {
    double x = (*a)[i], y = (*b)[i];
    if (std::fabs(x - y) > 1e-6 * std::max(1.0, std::max(std::fabs(x), std::fabs(y)))) return false;
  }
  return true;
}

// The value of a graph constant: an initializer that is not a graph input, or a Constant's `value`.
std::optional<HostTensor> constantOf(const Value* v) {
  try {
    if (v->isInitializer() && !v->isGraphInput()) return readTensor(*v->initializer());
    const Node* p = v->producer();
    if (p && sameDomain(p->domain(), "") && p->opType() == "Constant")
      if (const Attribute* a = p->attribute("value"); a && a->t) return readTensor(*a->t);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

struct Pattern::Binding {
  std::map<std::string, Value*> values;  // pattern value -> graph value
  std::map<int, Node*> nodes;            // pattern node -> graph node
  std::set<const Node*> used;
};

Pattern::Pattern(onnx::FunctionProto match, onnx::FunctionProto replacement, std::string where)
    : match_(std::move(match)), replacement_(std::move(replacement)), where_(std::move(where)) {
  if (match_.node_size() == 0) usageError(where_ + ": the match has no node");
  if (match_.output_size() == 0) usageError(where_ + ": the match has no output");
  if (match_.input_size() != replacement_.input_size() || match_.output_size() != replacement_.output_size())
    usageError(where_ + ": the match has " + std::to_string(match_.input_size()) + " inputs and " +
               std::to_string(match_.output_size()) + " outputs, the replacement " +
               std::to_string(replacement_.input_size()) + " and " + std::to_string(replacement_.output_size()));
  for (int i = 0; i < match_.node_size(); ++i)
    for (const auto& o : match_.node(i).output())
      if (o == match_.output(0)) anchor_ = i;
  if (anchor_ < 0) usageError(where_ + ": the match's output '" + match_.output(0) + "' is not produced by a node");
  if (match_.node(anchor_).op_type() == "Constant") usageError(where_ + ": the match's output is a Constant");
}

Pattern::~Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;

bool Pattern::matchInput(const std::string& pv, Value* value, Binding& b) const {
  if (!value) return pv.empty();
  for (const auto& formal : match_.input())
    if (formal == pv) {
      auto [it, fresh] = b.values.emplace(pv, value);
      return fresh || it->second == value;
    }
  for (int q = 0; q < match_.node_size(); ++q) {
    const auto& qn = match_.node(q);
    for (int k = 0; k < qn.output_size(); ++k) {
      if (qn.output(k) != pv) continue;
      if (qn.op_type() == "Constant" && sameDomain(qn.domain(), "")) {
        const onnx::AttributeProto* a = nullptr;
        for (const auto& x : qn.attribute())
          if (x.name() == "value") a = &x;
        if (!a) return false;
        auto have = constantOf(value);
        if (!have) return false;
        HostTensor want = readTensor(Tensor(a->t()));
        return sameConstant(want, *have);
      }
      Node* producer = value->producer();
      if (!producer || producer->output(static_cast<size_t>(k)) != value) return false;
      return matchNode(q, producer, b);
    }
  }
  return false;
}

bool Pattern::matchNode(int p, Node* node, Binding& b) const {
  if (auto it = b.nodes.find(p); it != b.nodes.end()) return it->second == node;
  if (b.used.count(node)) return false;
  const auto& pn = match_.node(p);
  if (pn.op_type() != node->opType() || !sameDomain(pn.domain(), node->domain())) return false;
  if (static_cast<size_t>(pn.input_size()) != node->inputs().size()) return false;
  if (static_cast<size_t>(pn.output_size()) > node->outputs().size()) return false;
  if (!node->subgraphs().empty()) return false;
  for (const auto& a : pn.attribute()) {
    const Attribute* have = node->attribute(a.name());
    if (!have || have->proto.SerializeAsString() != a.SerializeAsString()) return false;
  }
  b.nodes[p] = node;
  b.used.insert(node);
  for (int k = 0; k < pn.output_size(); ++k) b.values[pn.output(k)] = node->output(static_cast<size_t>(k));
  auto tryOrder = [&](const std::vector<size_t>& order) {
    Binding saved = b;
    for (size_t i = 0; i < order.size(); ++i)
      if (!matchInput(pn.input(static_cast<int>(i)), node->input(order[i]), b)) {
        b = std::move(saved);
        return false;
      }
    return true;
  };
  std::vector<size_t> order(node->inputs().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (tryOrder(order)) return true;
  if (commutative(pn.domain(), pn.op_type()) && order.size() == 2 && tryOrder({1, 0})) return true;
  b.nodes.erase(p);
  b.used.erase(node);
  for (int k = 0; k < pn.output_size(); ++k) b.values.erase(pn.output(k));
  return false;
}

size_t Pattern::rewrite(Model& model, Rewriter& rw, Graph& g) const {
  const auto& anchor = match_.node(anchor_);
  std::set<std::string> outputs(match_.output().begin(), match_.output().end());
  std::vector<Binding> matches;
  std::unordered_set<const Node*> taken;
  for (const auto& np : g.nodes()) {
    Node* n = np.get();
    if (n->opType() != anchor.op_type() || taken.count(n)) continue;
    Binding b;
    for (const Node* t : taken) b.used.insert(t);
    if (!matchNode(anchor_, n, b)) continue;
    bool complete = b.values.size() >= static_cast<size_t>(match_.input_size());
    for (const auto& formal : match_.input()) complete &= b.values.count(formal) > 0;
    for (const auto& out : match_.output()) complete &= b.values.count(out) && b.values[out];
    // Values between matched nodes are read by matched nodes only.
    std::unordered_set<const Node*> members;
    for (const auto& [_, m] : b.nodes) members.insert(m);
    for (const auto& [p, m] : b.nodes)
      for (int k = 0; k < match_.node(p).output_size() && complete; ++k) {
        if (outputs.count(match_.node(p).output(k))) continue;
        const Value* v = m->output(static_cast<size_t>(k));
        if (!v) continue;
        if (v->graphOutputCount() > 0) complete = false;
        for (const Use& u : v->uses()) complete &= members.count(u.node) > 0;
      }
    // Outputs of matched nodes the pattern does not name must be unused.
    for (const auto& [p, m] : b.nodes)
      for (size_t k = static_cast<size_t>(match_.node(p).output_size()); k < m->outputs().size() && complete; ++k)
        if (const Value* v = m->output(k); v && (!v->uses().empty() || v->graphOutputCount() > 0)) complete = false;
    if (!complete) continue;
    for (const auto& [_, m] : b.nodes) taken.insert(m);
    matches.push_back(std::move(b));
  }
  if (matches.empty()) return 0;
  auto body = buildFunction(model, replacement_);
  size_t index = 0;
  for (const auto& np : g.nodes()) np->scratch = ++index;  // graph order, for the matched (original) nodes
  for (auto& b : matches) {
    // The last matched node in graph order: the replacement goes after it.
    Node* last = b.nodes.at(anchor_);
    for (const auto& [_, m] : b.nodes)
      if (m->scratch > last->scratch) last = m;
    auto placement = popart::placementOf(*b.nodes.at(anchor_));
    std::string prefix = b.nodes.at(anchor_)->name().empty() ? g.nodeNames().fresh(match_.name()) : b.nodes.at(anchor_)->name();
    std::vector<Value*> ins;
    for (const auto& formal : match_.input()) ins.push_back(b.values.at(formal));
    std::vector<Value*> outs;
    for (const auto& o : match_.output()) outs.push_back(b.values.at(o));
    auto next = std::next(g.position(last));
    const Node* before = next == g.nodes().end() ? nullptr : next->get();
    Node* call = rw.createNode(g, before, {"", match_.name(), "graphrw.pattern", ins, std::vector<std::string>(outs.size())});
    // Constants the match read, removed below when nothing else reads them.
    std::vector<Value*> constants;
    for (const auto& [p, m] : b.nodes)
      for (Value* v : m->inputs())
        if (v && std::find(ins.begin(), ins.end(), v) == ins.end() &&
            std::find(constants.begin(), constants.end(), v) == constants.end() && constantOf(v))
          constants.push_back(v);
    for (size_t j = 0; j < outs.size(); ++j) rw.adoptOutput(call, j, outs[j]);
    std::vector<Node*> erase;
    for (const auto& [_, m] : b.nodes) erase.push_back(m);
    std::sort(erase.begin(), erase.end(), [](const Node* x, const Node* y) { return x->scratch > y->scratch; });
    for (Node* m : erase) rw.eraseNode(m);
    auto result = inlineBody(rw, call, body->body(), AttributeEnv{}, prefix);
    popart::applyPlacement(rw, result.created, placement);
    for (Value* v : constants) {
      if (!v->uses().empty() || v->graphOutputCount() > 0) continue;
      if (Node* p = v->producer()) {
        if (p->graph() == &g) rw.eraseNode(p);
      } else if (v->isInitializer() && !v->isGraphInput() && v->graph() == &g) {
        rw.eraseInitializer(v);
      }
    }
  }
  return matches.size();
}

}  // namespace graphrw
