#include "ir/rewriter.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <queue>
#include <set>
#include <unordered_map>

#include "ir/access.h"
#include "ir/builder.h"
#include "support/error.h"

namespace graphrw::ir {

const std::vector<ChangeCounts::Field>& ChangeCounts::fields() {
  static const std::vector<Field> table = {
      {"nodes_added", &ChangeCounts::nodesAdded, true},
      {"nodes_removed", &ChangeCounts::nodesRemoved, true},
      {"nodes_changed", &ChangeCounts::nodesChanged, true},
      {"values_renamed", &ChangeCounts::valuesRenamed, true},
      {"initializers_added", &ChangeCounts::initializersAdded, false},
      {"initializers_removed", &ChangeCounts::initializersRemoved, false},
      {"functions_added", &ChangeCounts::functionsAdded, false},
      {"functions_removed", &ChangeCounts::functionsRemoved, false},
      {"opset_imports_changed", &ChangeCounts::opsetImportsChanged, false},
      {"graph_outputs_changed", &ChangeCounts::graphOutputsChanged, false},
      {"value_info_removed", &ChangeCounts::valueInfoRemoved, false},
      {"ir_version_changed", &ChangeCounts::irVersionChanged, false},
      {"types_declared", &ChangeCounts::typesDeclared, false},
      {"doc_strings_changed", &ChangeCounts::docStringsChanged, false},
  };
  return table;
}

bool ChangeCounts::any() const {
  for (const auto& f : fields())
    if (this->*f.count) return true;
  return false;
}

namespace {
// A stamp for a new Rewriter: 1 .. 2^24 - 1, each once; 0 when all are used.
uint32_t takeStamp() {
  static std::atomic<uint32_t> next{1};
  uint32_t s = next.load(std::memory_order_relaxed);
  do {
    if (s > 0xffffff) return 0;
  } while (!next.compare_exchange_weak(s, s + 1, std::memory_order_relaxed));
  return s;
}
}  // namespace

Rewriter::Rewriter(Model& model) : model_(model), stamp_(takeStamp()) {}

bool Rewriter::createdHere(const Node* n) const {
  return stamp_ ? IrAccess::createdBy(*n) == stamp_ : created_.contains(n);
}

Node* Rewriter::createNode(Graph& g, const Node* before, NodeSpec spec) {
  auto owned = IrAccess::newNode();
  std::string name = spec.name.empty() ? std::string() : g.mutableNodeNames().fresh(spec.name);
  IrAccess::setIdentity(*owned, IrAccess::makeName(g, name), spec.opType, spec.domain, "");
  auto where = before ? g.position(before) : g.nodes().end();
  Node* n = g.insertNode(where, std::move(owned));
  auto& inputs = IrAccess::inputs(*n);
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    inputs.push_back(spec.inputs[i]);
    Graph::addUse(spec.inputs[i], n, static_cast<int>(i));
  }
  auto& outputs = IrAccess::outputs(*n);
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    if (spec.outputs[i].empty()) {
      outputs.push_back(nullptr);
      continue;
    }
    Value* v = g.addFreshValue(spec.outputs[i]);
    IrAccess::setProducer(*v, n, static_cast<int>(i));
    outputs.push_back(v);
  }
  counts_.nodesAdded++;
  if (stamp_)
    IrAccess::setCreatedBy(*n, stamp_);
  else
    created_.insert(n);
  return n;
}

void Rewriter::markChanged(const Node* n) {
  if (!createdHere(n)) changed_.insert(n);
  counts_.nodesChanged = changed_.size();
}

void Rewriter::setInput(Node* n, size_t index, Value* v) {
  auto& inputs = IrAccess::inputs(*n);
  if (index < inputs.size() && inputs[index] == v) return;  // nothing to change, nothing counted
  if (index >= inputs.size()) inputs.resize(index + 1, nullptr);
  Graph::removeUse(inputs[index], n, static_cast<int>(index));
  inputs[index] = v;
  Graph::addUse(v, n, static_cast<int>(index));
  markChanged(n);
}

void Rewriter::adoptOutput(Node* n, size_t index, Value* v) {
  auto& outputs = IrAccess::outputs(*n);
  if (index >= outputs.size()) outputs.resize(index + 1, nullptr);
  if (outputs[index] != nullptr) fail(ExitCode::Internal, "adoptOutput: output slot is taken");
  if (v->graph() != n->graph()) fail(ExitCode::Internal, "adoptOutput: value '" + v->name() + "' is in another graph");
  if (Node* old = v->producer()) IrAccess::outputs(*old)[static_cast<size_t>(v->producerIndex())] = nullptr;
  outputs[index] = v;
  IrAccess::setProducer(*v, n, static_cast<int>(index));
  markChanged(n);
}

void Rewriter::replaceAllUsesWith(Value* from, Value* to, bool graphOutputs) {
  std::vector<Use> uses = from->uses();  // copy: setInput edits the list
  for (const Use& u : uses) setInput(u.node, static_cast<size_t>(u.index), to);
  if (graphOutputs && from->graphOutputCount() > 0) {
    Graph* g = from->graph();
    for (size_t i = 0; i < g->outputs().size(); ++i)
      if (g->outputs()[i].value == from && from != to) {
        g->setOutputValue(i, to);
        counts_.graphOutputsChanged++;
      }
  }
}

void Rewriter::eraseNode(Node* n) {
  Graph* g = n->graph();
  for (Value* v : n->outputs())
    if (v && (!v->uses().empty() || v->graphOutputCount() > 0))
      fail(ExitCode::Internal, "erasing node '" + n->name() + "' whose output '" + v->name() + "' is still used");
  auto& inputs = IrAccess::inputs(*n);
  for (size_t i = 0; i < inputs.size(); ++i) Graph::removeUse(inputs[i], n, static_cast<int>(i));
  inputs.clear();
  // Nodes inside its subgraphs may read values of enclosing scopes: drop those uses.
  std::function<void(Graph&)> dropUses = [&](Graph& sub) {
    for (const auto& inner : sub.nodes()) {
      auto& in = IrAccess::inputs(*inner);
      for (size_t i = 0; i < in.size(); ++i)
        if (in[i] && in[i]->graph() != &sub) Graph::removeUse(in[i], inner.get(), static_cast<int>(i));
      inner->forEachSubgraph(dropUses);
    }
  };
  n->forEachSubgraph(dropUses);
  for (Value* v : IrAccess::outputs(*n)) {
    if (!v) continue;
    IrAccess::setProducer(*v, nullptr, -1);
    g->eraseValue(v);
  }
  IrAccess::outputs(*n).clear();
  if (!n->name().empty()) g->mutableNodeNames().erase(n->name());
  changed_.erase(n);
  created_.erase(n);
  counts_.nodesChanged = changed_.size();
  IrAccess::nodes(*g).erase(g->position(n));
  counts_.nodesRemoved++;
}

void Rewriter::setOp(Node* n, const std::string& opType, const std::string& domain) {
  IrAccess::setOp(*n, opType, domain);
  markChanged(n);
}

void Rewriter::setInputs(Node* n, const std::vector<Value*>& values) {
  auto& inputs = IrAccess::inputs(*n);
  for (size_t i = 0; i < inputs.size(); ++i) Graph::removeUse(inputs[i], n, static_cast<int>(i));
  inputs = values;
  for (size_t i = 0; i < inputs.size(); ++i) Graph::addUse(inputs[i], n, static_cast<int>(i));
  markChanged(n);
}

void Rewriter::reshapeOutputs(Node* n, const std::vector<int>& from, const std::vector<std::string>& fresh) {
  Graph* g = n->graph();
  std::vector<Value*> old = IrAccess::outputs(*n);
  std::vector<bool> kept(old.size(), false);
  std::vector<Value*> next;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] >= 0) {
      Value* v = old.at(static_cast<size_t>(from[i]));
      if (v && kept[static_cast<size_t>(from[i])])
        fail(ExitCode::Internal, "reshapeOutputs: output " + std::to_string(from[i]) + " taken twice");
      kept[static_cast<size_t>(from[i])] = true;
      next.push_back(v);
    } else if (i < fresh.size() && !fresh[i].empty()) {
      next.push_back(g->addFreshValue(fresh[i]));
    } else {
      next.push_back(nullptr);
    }
  }
  for (size_t k = 0; k < old.size(); ++k)
    if (old[k] && !kept[k] && (!old[k]->uses().empty() || old[k]->graphOutputCount() > 0))
      fail(ExitCode::Internal, "reshapeOutputs: dropping output '" + old[k]->name() + "' that is still used");
  for (size_t k = 0; k < old.size(); ++k)
    if (old[k] && !kept[k]) {
      IrAccess::setProducer(*old[k], nullptr, -1);
      g->eraseValue(old[k]);
    }
  IrAccess::outputs(*n) = next;
  for (size_t i = 0; i < next.size(); ++i)
    if (next[i]) IrAccess::setProducer(*next[i], n, static_cast<int>(i));
  markChanged(n);
}

void Rewriter::setAttribute(Node* n, onnx::AttributeProto attribute) {
  // Tensors and subgraphs become IR objects exactly as the loader builds them.
  Attribute a = buildAttribute(model_, *n->graph(), n, std::move(attribute));
  auto& attrs = n->attrs_;
  auto it = std::find_if(attrs.begin(), attrs.end(), [&](const Attribute& x) { return x.name() == a.name(); });
  if (it != attrs.end())
    *it = std::move(a);
  else
    attrs.push_back(std::move(a));
  markChanged(n);
}

bool Rewriter::renameAttribute(Node* n, const std::string& from, const std::string& to) {
  Attribute* a = n->mutableAttribute(from);
  if (!a || from == to) return a != nullptr;
  if (n->attribute(to)) fail(ExitCode::Internal, "renameAttribute: node '" + n->name() + "' has '" + to + "' already");
  a->mutableProto().set_name(to);
  markChanged(n);
  return true;
}

bool Rewriter::removeAttribute(Node* n, const std::string& name) {
  auto& attrs = n->attrs_;
  auto it = std::find_if(attrs.begin(), attrs.end(), [&](const Attribute& x) { return x.name() == name; });
  if (it == attrs.end()) return false;
  attrs.erase(it);
  markChanged(n);
  return true;
}

namespace {

// Calls fn(producer) for each value of `g` made by a node that `n` reads,
// in `n`'s subgraphs too.
template <typename Fn>
void forEachProducerRead(const Node& n, const Graph& g, Fn& fn) {
  for (const Value* v : n.inputs())
    if (v && v->graph() == &g && v->producer()) fn(*v->producer());
  n.forEachSubgraph([&](const Graph& sub) {
    for (const auto& inner : sub.nodes()) forEachProducerRead(*inner, g, fn);
  });
}

}  // namespace

// Node::scratch holds each node's position; the edges are one flat array
// (what a million-node graph can afford: no per-node containers).
bool Rewriter::sortTopologically(Graph& g) {
  auto& nodes = IrAccess::nodes(g);
  if (nodes.size() >= UINT32_MAX) fail(ExitCode::Internal, "sortTopologically: too many nodes");
  const auto count = static_cast<uint32_t>(nodes.size());
  std::vector<Node*> order;
  order.reserve(count);
  for (const auto& n : nodes) {
    n->scratch = order.size();
    order.push_back(n.get());
  }
  // In order already (the usual case): nothing to build.
  bool inOrder = true;
  for (uint32_t at = 0; at < count && inOrder; ++at) {
    auto before = [&](const Node& producer) { inOrder &= producer.scratch < at; };
    forEachProducerRead(*order[at], g, before);
  }
  if (inOrder) return false;
  // Edges producer -> reader as offsets into one array, and each reader's unmet count.
  std::vector<uint32_t> first(static_cast<size_t>(count) + 1, 0), pending(count, 0);
  for (uint32_t at = 0; at < count; ++at) {
    auto tally = [&](const Node& producer) {
      ++first[producer.scratch + 1];
      ++pending[at];
    };
    forEachProducerRead(*order[at], g, tally);
  }
  for (uint32_t i = 0; i < count; ++i) first[i + 1] += first[i];
  std::vector<uint32_t> readers(first[count]), next(first.begin(), first.end() - 1);
  for (uint32_t at = 0; at < count; ++at) {
    auto fill = [&](const Node& producer) { readers[next[producer.scratch]++] = at; };
    forEachProducerRead(*order[at], g, fill);
  }
  // Kahn's algorithm, always taking the earliest ready node: stable.
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (uint32_t i = 0; i < count; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<uint32_t> sorted;
  sorted.reserve(count);
  while (!ready.empty()) {
    uint32_t i = ready.top();
    ready.pop();
    sorted.push_back(i);
    for (uint32_t e = first[i]; e < first[i + 1]; ++e)
      if (--pending[readers[e]] == 0) ready.push(readers[e]);
  }
  if (sorted.size() != count) fail(ExitCode::Internal, "sortTopologically: the graph has a cycle");
  bool moved = false;
  for (uint32_t k = 0; k < count; ++k)
    if (sorted[k] != k) {
      moved = true;
      markChanged(order[sorted[k]]);
    }
  if (!moved) return false;
  // Splicing relinks each node without moving it: pointers to nodes stay valid.
  Graph::NodeList reordered;
  for (uint32_t k : sorted) reordered.splice(reordered.end(), nodes, g.position(order[k]));
  nodes.swap(reordered);
  return true;
}

std::string Rewriter::renameValue(Value* v, const std::string& wanted) {
  if (v->name() == wanted) return wanted;
  Graph* g = v->graph();
  std::string name = g->mutableNames().fresh(wanted);
  IrAccess::unindexValue(*g, v->name());
  g->mutableNames().erase(v->name());
  IrAccess::setName(*v, IrAccess::makeName(*g, name));
  IrAccess::indexValue(*g, v);
  counts_.valuesRenamed++;
  return name;
}

namespace {

// Sets a message's doc_string ("" clears the field, so nothing is written);
// returns whether that changed anything.
template <typename Message>
bool putDocString(Message& m, const std::string& text) {
  if (text.empty()) {
    if (!m.has_doc_string()) return false;
    m.clear_doc_string();
    return true;
  }
  if (m.has_doc_string() && m.doc_string() == text) return false;
  m.set_doc_string(text);
  return true;
}

}  // namespace

void Rewriter::setDocString(Node* n, const std::string& text) {
  if (text.empty() && !n->residual().has_doc_string()) return;  // no residual is made just to clear it
  if (!putDocString(n->mutableResidual(), text)) return;
  markChanged(n);
  counts_.docStringsChanged++;
}

void Rewriter::setDocString(Graph& g, const std::string& text) {
  onnx::GraphProto residual = g.residual();
  if (!putDocString(residual, text)) return;
  g.setResidual(std::move(residual));
  counts_.docStringsChanged++;
}

void Rewriter::setDocString(const Function* f, const std::string& text) {
  if (putDocString(model_.findFunction(f->key())->mutableResidual(), text)) counts_.docStringsChanged++;
}

void Rewriter::setModelDocString(const std::string& text) {
  if (putDocString(model_.mutableResidual(), text)) counts_.docStringsChanged++;
}

std::string Rewriter::reserveNodeName(Graph& g, const std::string& base) { return g.mutableNodeNames().fresh(base); }

std::string Rewriter::renameNode(Node* n, const std::string& wanted) {
  if (n->name() == wanted) return wanted;
  Graph* g = n->graph();
  if (!n->name().empty()) g->mutableNodeNames().erase(n->name());
  std::string name = g->mutableNodeNames().fresh(wanted);
  IrAccess::setName(*n, IrAccess::makeName(*g, name));
  markChanged(n);
  return name;
}

void Rewriter::setType(Value* v, onnx::TypeProto type) { v->setType(std::move(type)); }

void Rewriter::forgetType(Value* v) { v->type_ = nullptr; }

void Rewriter::expectDeclarations(Graph& g, size_t entries) { g.valueInfo_.reserve(g.valueInfo_.size() + entries); }

void Rewriter::declareType(Graph& g, Value* v, onnx::TypeProto type) {
  // Interned: one pointer per distinct type, and equal types are equal pointers.
  const onnx::TypeProto* interned = g.internType(std::move(type));
  bool declared = false, changed = false;
  auto set = [&](std::vector<ValueInfo>& entries) {
    for (auto& e : entries)
      if (e.value == v) {
        declared = true;
        if (e.type_ != interned) changed = true;
        e.type_ = interned;
      }
  };
  // A value of g says which lists name it: a million declarations into a graph
  // without value_info (set-shapes) are then each O(1), not a scan of the list
  // they fill. A value of another scope (an outer value declared in a
  // subgraph) has flags for its own graph: every list is read.
  const bool own = v->graph() == &g;
  if (!own || v->isGraphInput()) set(g.inputs_);
  if (!own || v->graphOutputCount() > 0) set(g.outputs_);
  if (!declared && (!own || v->hasValueInfo_)) set(g.valueInfo_);
  if (!declared) {
    g.addValueInfo(ValueInfo(v, interned, nullptr));
    changed = true;
  }
  v->type_ = interned;
  if (changed) counts_.typesDeclared++;
}

Value* Rewriter::addInitializer(Graph& g, const std::string& name, std::unique_ptr<Tensor> tensor) {
  Value* v = g.addFreshValue(name);
  tensor->mutableProto().set_name(v->name().str());
  g.addInitializer(v, std::move(tensor));
  counts_.initializersAdded++;
  return v;
}

void Rewriter::makeDense(Value* v, std::unique_ptr<Tensor> tensor) {
  if (!v->isSparseInitializer()) fail(ExitCode::Internal, "makeDense: '" + v->name() + "' is not a sparse initializer");
  tensor->mutableProto().set_name(v->name().str());
  v->graph()->makeDense(v, std::move(tensor));
  counts_.initializersAdded++;
}

void Rewriter::eraseInitializer(Value* v) {
  if (!v->isInitializer() || !v->uses().empty() || v->graphOutputCount() > 0 || v->isGraphInput())
    fail(ExitCode::Internal, "eraseInitializer: '" + v->name() + "' is not an unused initializer");
  v->graph()->eraseValue(v);
  counts_.initializersRemoved++;
}

void Rewriter::setGraphOutput(Graph& g, size_t index, Value* v) {
  if (index < g.outputs().size() && g.outputs()[index].value == v) return;
  g.setOutputValue(index, v);
  counts_.graphOutputsChanged++;
}

void Rewriter::reserve(Graph& g, size_t values, size_t nodes) { g.reserveMore(values, nodes); }

Function* Rewriter::addFunction(std::unique_ptr<Function> fn) {
  counts_.functionsAdded++;
  return model_.addFunction(std::move(fn));
}

void Rewriter::removeFunction(const Function* fn) {
  model_.removeFunction(fn);
  counts_.functionsRemoved++;
}

void Rewriter::setIrVersion(int64_t version) {
  if (model_.irVersion() == version) return;
  model_.mutableResidual().set_ir_version(version);
  counts_.irVersionChanged++;
}

void Rewriter::setOpsetImport(const Graph& g, const std::string& domain, int64_t version) {
  Function* f = g.owningFunction();
  if (!f) {
    if (model_.opsetVersion(domain) == version) return;
    model_.setOpsetImport(domain, version);
    counts_.opsetImportsChanged++;
    return;
  }
  auto* imports = f->mutableResidual().mutable_opset_import();
  for (auto& op : *imports)
    if (op.domain() == domain || (isDefaultDomain(op.domain()) && isDefaultDomain(domain))) {
      if (op.version() == version) return;
      op.set_version(version);
      counts_.opsetImportsChanged++;
      return;
    }
  auto* op = imports->Add();
  op->set_domain(domain);
  op->set_version(version);
  counts_.opsetImportsChanged++;
}

size_t Rewriter::removeValueInfo(Graph& g, Value* v) {
  size_t removed = g.removeValueInfo(v);
  counts_.valueInfoRemoved += removed;
  if (removed && !v->producer() && v->uses().empty() && !v->isGraphInput() && !v->isInitializer() &&
      !v->isSparseInitializer() && v->graphOutputCount() == 0 && !v->hasValueInfo_)
    v->graph()->eraseValue(v);
  return removed;
}

bool Rewriter::removeOpsetImport(const Graph& g, const std::string& domain) {
  Function* f = g.owningFunction();
  auto* imports = f ? f->mutableResidual().mutable_opset_import() : model_.mutableResidual().mutable_opset_import();
  for (int i = imports->size() - 1; i >= 0; --i)
    if (imports->Get(i).domain() == domain) {
      imports->DeleteSubrange(i, 1);
      counts_.opsetImportsChanged++;
      return true;
    }
  return false;
}

}  // namespace graphrw::ir
