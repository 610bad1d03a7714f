#include "pattern/pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analysis/extensions.h"
#include "analysis/opsets.h"
#include "fold/fold.h"
#include "ir/builder.h"
#include "ir/inliner.h"
#include "pattern/pattern_detail.h"
#include "support/error.h"

namespace graphrw {

using namespace ir;

namespace pattern_detail {

bool sameDomain(const std::string& a, const std::string& b) { return ir::domainKey(a) == ir::domainKey(b); }

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
    case onnx::TensorProto::FLOAT:
      ok = read(float{});
      break;
    case onnx::TensorProto::DOUBLE:
      ok = read(double{});
      break;
    case onnx::TensorProto::INT32:
      ok = read(int32_t{});
      break;
    case onnx::TensorProto::INT64:
      ok = read(int64_t{});
      break;
    default:
      return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return out;
}

// Same
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

}  // namespace pattern_detail

using pattern_detail::numbers;
using pattern_detail::sameDomain;

namespace {
const ir::ValueList kNoValues;
}

Pattern::Pattern(onnx::FunctionProto match, onnx::FunctionProto replacement, std::string where,
                 PatternConstraints constraints)
    : match_(std::move(match)),
      replacement_(std::move(replacement)),
      where_(std::move(where)),
      constraints_(std::move(constraints)) {
  // `attr = @x` in the replacement, x a match input: the attribute takes the
  // value of the constant x binds to (LayerNorm's epsilon).
  for (const auto& n : replacement_.node())
    for (const auto& a : n.attribute())
      if (!a.ref_attr_name().empty()) {
        const std::string& r = a.ref_attr_name();
        if (std::find(match_.input().begin(), match_.input().end(), r) == match_.input().end())
          usageError(where_ + ": the replacement's attribute '" + a.name() + "' = @" + r +
                     " names no input of the match");
        attributeRefs_[r] = a.type();
        if (std::find(constraints_.constants.begin(), constraints_.constants.end(), r) == constraints_.constants.end())
          constraints_.constants.push_back(r);
      }
  for (const auto* list : {&constraints_.weights, &constraints_.constants})
    for (const auto& name : *list)
      if (std::find(match_.input().begin(), match_.input().end(), name) == match_.input().end())
        usageError(where_ + ": constraint names '" + name + "', which is not an input of the match");
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
  if (match_.node_size() > kMaxMatchNodes)
    usageError(where_ + ": the match has " + std::to_string(match_.node_size()) + " nodes; at most " +
               std::to_string(kMaxMatchNodes) + " are supported");
  compile();
}

// The match graph as indices: what each node input reads (a formal, a
// Constant node, an output of another node), attributes serialised once.
void Pattern::compile() {
  compiled_ = std::make_unique<pattern_detail::CompiledPattern>();
  auto& c = *compiled_;
  c.anchor = anchor_;
  c.formals.assign(match_.input().begin(), match_.input().end());
  std::map<std::string, pattern_detail::Ref> refs;
  for (int f = 0; f < match_.input_size(); ++f)
    refs.emplace(match_.input(f), pattern_detail::Ref{pattern_detail::Ref::Formal, f});
  for (int q = 0; q < match_.node_size(); ++q) {
    const auto& pn = match_.node(q);
    bool constant = pn.op_type() == "Constant" && sameDomain(pn.domain(), "");
    for (int k = 0; k < pn.output_size(); ++k)
      refs.emplace(pn.output(k), constant ? pattern_detail::Ref{pattern_detail::Ref::Constant, q}
                                          : pattern_detail::Ref{pattern_detail::Ref::Output, q, k});
  }
  for (int q = 0; q < match_.node_size(); ++q) {
    const auto& pn = match_.node(q);
    pattern_detail::CompiledNode n;
    n.op = pn.op_type();
    n.domain = pn.domain();
    n.outputs = static_cast<size_t>(pn.output_size());
    n.constant = pn.op_type() == "Constant" && sameDomain(pn.domain(), "");
    n.commutative = constraints_.commutative && sameDomain(pn.domain(), "") && (n.op == "Add" || n.op == "Mul") &&
                    pn.input_size() == 2;
    for (const auto& a : pn.attribute()) {
      n.attributes.emplace_back(a.name(), a.SerializeAsString());
      if (n.constant && a.name() == "value") n.value = readTensor(Tensor(a.t()));
    }
    for (const auto& in : pn.input()) {
      auto it = refs.find(in);
      n.inputs.push_back(in.empty()         ? pattern_detail::Ref{pattern_detail::Ref::Empty}
                         : it == refs.end() ? pattern_detail::Ref{}
                                            : it->second);
    }
    c.nodes.push_back(std::move(n));
  }
  // Slots in the order the matcher binds them, so a name given twice keeps the last binding as before.
  auto slot = [&](const std::string& name) {
    return c.slots.emplace(name, static_cast<int>(c.slots.size())).first->second;
  };
  for (const auto& f : match_.input()) c.formalSlots.push_back(slot(f));
  for (const auto& pn : match_.node()) c.outputSlots.emplace_back().assign(pn.output_size(), 0);
  for (int q = 0; q < match_.node_size(); ++q)
    for (int k = 0; k < match_.node(q).output_size(); ++k)
      c.outputSlots[static_cast<size_t>(q)][static_cast<size_t>(k)] = slot(match_.node(q).output(k));
  for (const auto& o : match_.output()) c.resultSlots.push_back(c.slots.at(o));
}

Value*& Pattern::bound(PatternMatch& b, const std::string& formal) const {
  return b.values[static_cast<size_t>(compiled_->slots.at(formal))];
}

Pattern::~Pattern() = default;
Pattern::Pattern(Pattern&&) noexcept = default;

bool Pattern::complete(PatternMatch& b) const {
  const auto& c = *compiled_;
  for (int s : c.formalSlots)
    if (!b.values[static_cast<size_t>(s)]) return false;
  for (int s : c.resultSlots)
    if (!b.values[static_cast<size_t>(s)]) return false;
  // A weight may be reached through Identity nodes (PyTorch passes merged
  // parameters so): the match binds the initializer itself.
  for (const auto& w : constraints_.weights) {
    Value*& slot = bound(b, w);
    Value* v = slot;
    for (size_t hops = 0; v && !v->isInitializer() && hops < 64; ++hops) {
      const Node* p = v->producer();
      if (!p || p->opType() != "Identity" || !isDefaultDomain(p->domain())) break;
      v = p->input(0);
    }
    if (!v || !v->isInitializer() || v->isGraphInput()) return false;
    slot = v;
  }
  for (const auto& k : constraints_.constants)
    if (!constantOf(bound(b, k))) return false;
  // Values between matched nodes are read by matched nodes only, and no
  // input of the match is made inside it (the replacement could not read it).
  std::unordered_set<const Node*> members;
  for (const Node* m : b.nodes)
    if (m) members.insert(m);
  for (int s : c.formalSlots)
    if (const Node* p = b.values[static_cast<size_t>(s)]->producer(); p && members.count(p)) return false;
  std::set<int> results(c.resultSlots.begin(), c.resultSlots.end());
  for (size_t p = 0; p < b.nodes.size(); ++p) {
    const Node* m = b.nodes[p];
    if (!m) continue;
    const auto& slots = c.outputSlots[p];
    for (size_t k = 0; k < slots.size(); ++k) {
      if (results.count(slots[k])) continue;
      const Value* v = m->output(k);
      if (!v) continue;
      if (v->graphOutputCount() > 0) return false;
      for (const Use& u : v->uses())
        if (!members.count(u.node)) return false;
    }
    // Outputs of matched nodes the pattern does not name must be unused.
    for (size_t k = slots.size(); k < m->outputs().size(); ++k)
      if (const Value* v = m->output(k); v && (!v->uses().empty() || v->graphOutputCount() > 0)) return false;
  }
  return true;
}

onnx::AttributeProto Pattern::attributeFromConstant(const std::string& formal, int type, const PatternMatch& b) const {
  const Value* bound = b.values[static_cast<size_t>(compiled_->slots.at(formal))];
  auto t = constantOf(bound);
  auto values = t ? numbers(*t) : std::nullopt;
  if (!values || values->empty())
    usageError(where_ + ": input '" + formal + "' gives an attribute but is not a numeric constant");
  // The value as the attribute holds it, exactly, or an error naming the constant: a NaN or 1e30 is no INT.
  auto fail = [&](const std::string& why) -> void {
    usageError(where_ + ": input '" + formal + "' (value '" + bound->name() + "' of the model) " + why);
  };
  auto shown = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", v);
    return std::string(text);
  };
  bool integerTensor = t->type == onnx::TensorProto::INT64 || t->type == onnx::TensorProto::INT32;
  std::vector<int64_t> ints = integerTensor ? t->asInts() : std::vector<int64_t>{};
  auto toInt = [&](size_t i) {
    if (integerTensor) return ints[i];
    double v = (*values)[i];
    if (!std::isfinite(v) || std::trunc(v) != v || std::fabs(v) >= 9.2e18)
      fail("holds " + shown(v) + ", not an integer an INT attribute can hold");
    return static_cast<int64_t>(v);
  };
  auto toFloat = [&](size_t i) {
    double v = (*values)[i];
    if (std::isfinite(v) && std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max()))
      fail("holds " + shown(v) + ", too large for a FLOAT attribute");
    return static_cast<float>(v);
  };
  if ((type == onnx::AttributeProto::FLOAT || type == onnx::AttributeProto::INT) && values->size() != 1)
    fail("holds " + std::to_string(values->size()) + " values; a " + ir::attributeTypeName(type) +
         " attribute takes one");
  onnx::AttributeProto a;
  a.set_name(formal);
  a.set_type(static_cast<onnx::AttributeProto_AttributeType>(type));
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      a.set_f(toFloat(0));
      break;
    case onnx::AttributeProto::INT:
      a.set_i(toInt(0));
      break;
    case onnx::AttributeProto::FLOATS:
      for (size_t i = 0; i < values->size(); ++i) a.add_floats(toFloat(i));
      break;
    case onnx::AttributeProto::INTS:
      for (size_t i = 0; i < values->size(); ++i) a.add_ints(toInt(i));
      break;
    default:
      usageError(where_ + ": input '" + formal + "' cannot give an attribute of this type");
  }
  return a;
}

size_t Pattern::rewrite(Model& model, Rewriter& rw, Graph& g, uint64_t maxSteps) const {
  FlatPointerSet<Node> taken;
  auto matches = find(g, taken, maxSteps);
  size_t count = matches.size();
  apply(model, rw, g, matches);
  return count;
}

// Long: per match, the replacement body (converted once per set of constant values), its call,
// the matched nodes erased and the call inlined: one edit sequence whose order matters.
std::vector<Node*> Pattern::apply(Model& model, Rewriter& rw, Graph& g, PatternMatches& matches) const {
  std::vector<Node*> created;
  if (matches.empty()) return created;
  // The replacement's ops must mean the same at the version the graph
  // imports: a body written for another ai.onnx version is converted
  // (convertFunction: the opset pass's conversion) when its ops differ
  // between the two. Attributes taken from matched constants are written into the body first (one body per
  // distinct set of values), so the conversion sees plain attributes.
  auto scope = scopeOpsets(model, g);
  for (const auto& op : replacement_.opset_import())
    if (!scope.count(op.domain())) rw.setOpsetImport(g, op.domain(), op.version());  // a new domain (ai.graphcore)
  std::map<std::string, std::unique_ptr<Function>> bodies;
  auto bodyFor = [&](const std::map<std::string, onnx::AttributeProto>& values) -> const Function& {
    std::string key;
    for (const auto& [k, v] : values) key += k + "=" + v.SerializeAsString() + ";";
    auto& slot = bodies[key];
    if (slot) return *slot;
    onnx::FunctionProto fp = replacement_;
    for (auto& n : *fp.mutable_node())
      for (auto& a : *n.mutable_attribute()) {
        if (a.ref_attr_name().empty()) continue;
        std::string name = a.name();
        a = values.at(a.ref_attr_name());
        a.set_name(name);
      }
    auto body = buildFunction(model, fp);
    for (const auto& op : replacement_.opset_import()) {
      auto it = scope.find(op.domain());
      if (it == scope.end() || it->second == op.version()) continue;
      auto differ = differingOps(body->body(), op.domain(), op.version(), it->second);
      if (differ.empty()) continue;
      std::string list;
      for (const auto& d : differ) list += (list.empty() ? "" : ", ") + d;
      if (!ir::isDefaultDomain(op.domain()))
        usageError(where_ + ": the replacement imports " + op.domain() + " " + std::to_string(op.version()) +
                   ", the graph " + std::to_string(it->second) + ", and " + list + " differ between them");
      try {
        body = convertFunction(model, *body, op.version(), it->second);
      } catch (const std::exception& e) {
        usageError(where_ + ": the replacement imports ai.onnx " + std::to_string(op.version()) + ", the graph " +
                   std::to_string(it->second) + " (" + list + " differ) and converting it failed: " + e.what());
      }
    }
    slot = std::move(body);
    return *slot;
  };
  size_t index = 0;
  for (const auto& np : g.nodes()) np->scratch = ++index;  // graph order, for the matched (original) nodes
  for (; !matches.empty(); matches.pop_front()) {
    PatternMatch& b = matches.front();
    // The last matched node in graph order: the replacement goes after it.
    Node* last = b.nodes.at(anchor_);
    for (Node* m : b.nodes)
      if (m && m->scratch > last->scratch) last = m;
    auto placement = ext::placementOf(*b.nodes.at(anchor_));
    std::string prefix =
        b.nodes.at(anchor_)->name().empty() ? rw.reserveNodeName(g, match_.name()) : b.nodes.at(anchor_)->name().str();
    std::vector<Value*> ins;
    for (int s : compiled_->formalSlots) ins.push_back(b.values[static_cast<size_t>(s)]);
    std::vector<Value*> outs;
    for (int s : compiled_->resultSlots) outs.push_back(b.values[static_cast<size_t>(s)]);
    std::map<std::string, onnx::AttributeProto> values;
    for (const auto& [formal, type] : attributeRefs_) values[formal] = attributeFromConstant(formal, type, b);
    const Function& body = bodyFor(values);
    auto next = std::next(g.position(last));
    const Node* before = next == g.nodes().end() ? nullptr : next->get();
    Node* call =
        rw.createNode(g, before, {"", match_.name(), "graphrw.pattern", ins, std::vector<std::string>(outs.size())});
    // Constants the match read, removed below when nothing else reads them.
    std::vector<Value*> constants;
    for (const Node* m : b.nodes)
      for (Value* v : m ? m->inputs() : kNoValues)
        if (v && std::find(ins.begin(), ins.end(), v) == ins.end() &&
            std::find(constants.begin(), constants.end(), v) == constants.end() && constantOf(v))
          constants.push_back(v);
    for (size_t j = 0; j < outs.size(); ++j) rw.adoptOutput(call, j, outs[j]);
    std::vector<Node*> erase;
    for (Node* m : b.nodes)
      if (m) erase.push_back(m);
    std::sort(erase.begin(), erase.end(), [](const Node* x, const Node* y) { return x->scratch > y->scratch; });
    for (Node* m : erase) rw.eraseNode(m);
    auto result = inlineBody(rw, call, body.body(), AttributeEnv{}, prefix);
    ext::applyPlacement(rw, result.created, placement);
    created.insert(created.end(), result.created.begin(), result.created.end());
    for (Value* v : constants) {
      if (!v->uses().empty() || v->graphOutputCount() > 0) continue;
      if (Node* p = v->producer()) {
        if (p->graph() == &g) rw.eraseNode(p);
      } else if (v->isInitializer() && !v->isGraphInput() && v->graph() == &g) {
        rw.eraseInitializer(v);
      }
    }
  }
  // A replacement sits after the last node of its match; readers of a match
  // output that came before that node move after it.
  rw.sortTopologically(g);
  return created;
}

}  // namespace graphrw
