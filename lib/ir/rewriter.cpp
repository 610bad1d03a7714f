#include "ir/rewriter.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

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

Node* Rewriter::createNode(Graph& g, const Node* before, NodeSpec spec) {
  auto owned = IrAccess::newNode();
  std::string name = spec.name.empty() ? std::string() : g.mutableNodeNames().fresh(spec.name);
  IrAccess::setIdentity(*owned, std::move(name), std::move(spec.opType), std::move(spec.domain), "");
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
  created_.insert(n);
  return n;
}

void Rewriter::markChanged(const Node* n) {
  if (!created_.count(n)) changed_.insert(n);
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
  if (it != attrs.end()) *it = std::move(a);
  else attrs.push_back(std::move(a));
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

bool Rewriter::sortTopologically(Graph& g) {
  auto& nodes = IrAccess::nodes(g);
  std::unordered_map<const Node*, size_t> index;
  std::vector<Node*> order;
  for (const auto& n : nodes) {
    index[n.get()] = order.size();
    order.push_back(n.get());
  }
  // The node of g a value read from anywhere inside `n` is produced by.
  std::vector<std::vector<size_t>> users(order.size());
  std::vector<size_t> pending(order.size(), 0);
  std::function<void(const Node&, size_t)> reads = [&](const Node& n, size_t at) {
    for (Value* v : n.inputs())
      if (v && v->graph() == &g && v->producer()) {
        size_t from = index.at(v->producer());
        users[from].push_back(at);
        pending[at]++;
      }
    n.forEachSubgraph([&](Graph& sub) {
      for (const auto& inner : sub.nodes()) reads(*inner, at);
    });
  };
  for (size_t i = 0; i < order.size(); ++i) reads(*order[i], i);
  // Kahn's algorithm, always taking the earliest ready node: stable.
  std::set<size_t> ready;
  for (size_t i = 0; i < order.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<size_t> sorted;
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    sorted.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.insert(u);
  }
  if (sorted.size() != order.size()) fail(ExitCode::Internal, "sortTopologically: the graph has a cycle");
  bool moved = false;
  for (size_t k = 0; k < sorted.size(); ++k) moved |= sorted[k] != k;
  if (!moved) return false;
  std::list<std::unique_ptr<Node>> next;
  std::vector<std::list<std::unique_ptr<Node>>::iterator> where;
  for (auto it = nodes.begin(); it != nodes.end(); ++it) where.push_back(it);
  for (size_t k = 0; k < sorted.size(); ++k)
    if (sorted[k] != k) markChanged(where[sorted[k]]->get());
  for (size_t k : sorted) next.splice(next.end(), nodes, where[k]);
  nodes.swap(next);
  return true;
}

std::string Rewriter::renameValue(Value* v, const std::string& wanted) {
  if (v->name() == wanted) return wanted;
  Graph* g = v->graph();
  auto& index = IrAccess::byName(*g);
  std::string name = g->mutableNames().fresh(wanted);
  index.erase(v->name());
  g->mutableNames().erase(v->name());
  IrAccess::setName(*v, name);
  index.insert(v);
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
  if (putDocString(g.mutableResidual(), text)) counts_.docStringsChanged++;
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
  IrAccess::setName(*n, name);
  markChanged(n);
  return name;
}

void Rewriter::setType(Value* v, onnx::TypeProto type) { v->setType(std::move(type)); }

void Rewriter::forgetType(Value* v) { v->type_.reset(); }

void Rewriter::declareType(Graph& g, Value* v, onnx::TypeProto type) {
  bool declared = false, changed = false;
  auto set = [&](std::vector<ValueInfo>& entries) {
    for (auto& e : entries)
      if (e.value == v) {
        declared = true;
        if (e.info.type().SerializeAsString() != type.SerializeAsString()) changed = true;
        *e.info.mutable_type() = type;
      }
  };
  set(g.inputs_);
  set(g.outputs_);
  if (!declared) set(g.valueInfo_);
  if (!declared) {
    onnx::ValueInfoProto info;
    info.set_name(v->name());
    *info.mutable_type() = type;
    g.addValueInfo(v, std::move(info));
    changed = true;
  }
  v->setType(std::move(type));
  if (changed) counts_.typesDeclared++;
}

Value* Rewriter::addInitializer(Graph& g, const std::string& name, std::unique_ptr<Tensor> tensor) {
  Value* v = g.addFreshValue(name);
  tensor->mutableProto().set_name(v->name());
  g.addInitializer(v, std::move(tensor));
  counts_.initializersAdded++;
  return v;
}

void Rewriter::makeDense(Value* v, std::unique_ptr<Tensor> tensor) {
  if (!v->isSparseInitializer()) fail(ExitCode::Internal, "makeDense: '" + v->name() + "' is not a sparse initializer");
  tensor->mutableProto().set_name(v->name());
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
      !v->isSparseInitializer() && v->graphOutputCount() == 0 && v->valueInfos_ == 0)
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
