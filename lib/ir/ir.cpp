#include "ir/ir.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "ir/access.h"
#include "ir/attribute_interner.h"
#include "support/error.h"
#include "support/external_data.h"
#include "support/wire.h"

namespace graphrw::ir {

// ---------------------------------------------------------------------------
// Attribute and Node. An attribute without tensors or graphs (most) allocates no Objects.
const std::vector<Tensor>& Attribute::tensors() const {
  static const Objects none;
  return (objects_ ? *objects_ : none).tensors;
}
const std::vector<std::unique_ptr<Graph>>& Attribute::graphs() const {
  static const Objects none;
  return (objects_ ? *objects_ : none).graphs;
}
Attribute::Objects& Attribute::objects() { return objects_ ? *objects_ : *(objects_ = std::make_unique<Objects>()); }

onnx::AttributeProto& Attribute::mutableProto() {
  if (!proto_ || proto_.shared()) proto_ = SharedAttributeProto(proto());
  return proto_.mutableRef();
}

void AttributeInterner::assign(Attribute& a, onnx::AttributeProto&& proto) {
  key_.clear();
  proto.AppendToString(&key_);
  if (auto* shared = shared_.find(key_)) {
    a.proto_ = *shared;
    return;
  }
  a.proto_ = SharedAttributeProto(std::move(proto));
  if (shared_.size() < kMaxEntries) shared_.emplace(key_, a.proto_);
}

void Value::setType(onnx::TypeProto type) {
  assert(graph_ && graph_->model());
  type_ = graph_->model()->internType(std::move(type));
}

template <typename Proto>
const Proto* Model::intern(FlatStringMap<std::string, std::unique_ptr<const Proto>>& table, Proto&& proto) {
  internKey_.clear();
  proto.AppendToString(&internKey_);
  if (auto* known = table.find(internKey_)) return known->get();
  return table.emplace(internKey_, std::make_unique<const Proto>(std::move(proto))).first->get();
}

void Graph::setResidual(onnx::GraphProto&& residual) {
  assert(model_);
  residual_ = residual.ByteSizeLong() == 0 ? nullptr : model_->intern(model_->graphResiduals_, std::move(residual));
}

const Attribute* Node::attribute(std::string_view name) const {
  for (const auto& a : attrs_)
    if (a.name() == name) return &a;
  return nullptr;
}

Attribute* Node::mutableAttribute(std::string_view name) {
  for (auto& a : attrs_)
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> result;
  forEachSubgraph([&](Graph& g) { result.push_back(&g); });
  return result;
}

// ---------------------------------------------------------------------------
// Graph

Value* Graph::findLocal(std::string_view name) const {
  if (indexed_) return byName_.find(name);
  for (const auto& v : values_)
    if (v->name_ == name) return v.get();
  return nullptr;
}

void Graph::buildIndex() {
  indexed_ = true;
  byName_.reserve(values_.size());
  for (const auto& v : values_)
    if (!byName_.insert(v.get())) fail(ExitCode::Internal, "value '" + v->name_ + "' is in the graph twice");
}

void Graph::indexInsert(Value* v) {
  if (indexed_ && !byName_.insert(v)) fail(ExitCode::Internal, "value name '" + v->name_ + "' is in use");
}

void Graph::indexErase(std::string_view name) {
  if (indexed_) byName_.erase(name);
}

Value* Graph::find(std::string_view name) const {
  for (const Graph* g = this; g != nullptr; g = g->parent_)
    if (Value* v = g->findLocal(name)) return v;
  return nullptr;
}

namespace {
std::unique_ptr<Value> newValue() { return std::make_unique<Value>(); }

// Appends to a graph's value array; a large full one grows by a quarter, not
// twice (flat_detail::roomForOneMore: a loaded graph's array is sized exactly).
void append(std::vector<std::unique_ptr<Value>>& values, std::unique_ptr<Value> v) {
  if (values.size() == values.capacity()) values.reserve(flat_detail::roomForOneMore(values.size(), values.size()));
  values.push_back(std::move(v));
}
}  // namespace

Value* Graph::addValue(std::string_view name) {
  auto value = newValue();
  IrAccess::setName(*value, IrAccess::makeName(*this, name));
  if (!admit(value.get())) badInput("value '" + value->name() + "' is defined twice");
  names_->insert(name);
  return keep(std::move(value));
}

Value* Graph::addFreshValue(std::string_view base) {
  auto value = newValue();
  IrAccess::setName(*value, IrAccess::makeName(*this, names_->fresh(base)));  // reserved in the table by fresh()
  if (!admit(value.get())) fail(ExitCode::Internal, "fresh name '" + value->name() + "' is in use");
  return keep(std::move(value));
}

bool Graph::admit(Value* v) { return indexed_ ? byName_.insert(v) : findLocal(v->name_) == nullptr; }

Value* Graph::keep(std::unique_ptr<Value> value) {
  Value* raw = value.get();
  IrAccess::place(*value, this, values_.size());
  append(values_, std::move(value));
  if (!indexed_ && values_.size() >= kIndexFrom) buildIndex();
  return raw;
}

void Graph::reserve(size_t values) {
  values_.reserve(values);
  if (values < kIndexFrom) return;
  if (!indexed_) buildIndex();
  byName_.reserve(values);
}

void Graph::reserveMore(size_t values, size_t nodes) {
  reserve(values_.size() + values);
  names_->reserveMore(values);
  nodeNames_->reserveMore(nodes);
}

onnx::ValueInfoProto ValueInfo::proto() const {
  onnx::ValueInfoProto p;
  if (rest_) p = *rest_;
  p.set_name(value->name().str());
  if (type_) *p.mutable_type() = *type_;
  return p;
}

const onnx::TypeProto* Graph::internType(onnx::TypeProto&& type) {
  assert(model_);
  return model_->internType(std::move(type));
}

ValueInfo Graph::entry(Value* v, onnx::ValueInfoProto&& info) {
  const onnx::TypeProto* type = info.has_type() ? internType(std::move(*info.mutable_type())) : nullptr;
  info.clear_name();
  info.clear_type();
  std::unique_ptr<onnx::ValueInfoProto> rest;
  if (info.ByteSizeLong() > 0) rest = std::make_unique<onnx::ValueInfoProto>(std::move(info));
  return ValueInfo(v, type, std::move(rest));
}

ValueInfo Graph::entry(Value* v, const ValueInfo& like) {
  const onnx::TypeProto* type = like.type_;
  // Another model's interned type is copied into this one's.
  if (type && like.value->graph()->model() != model_) type = internType(onnx::TypeProto(*type));
  return ValueInfo(v, type, like.rest_ ? std::make_unique<onnx::ValueInfoProto>(*like.rest_) : nullptr);
}

void Graph::addInput(ValueInfo e) {
  Value* v = e.value;
  v->graphInput_ = true;
  if (e.type_ && !v->type_) v->type_ = e.type_;
  inputs_.push_back(std::move(e));
}

void Graph::addOutput(ValueInfo e) {
  Value* v = e.value;
  if (v->graphOutputs_ == Value::kMaxGraphOutputs)
    badInput("value '" + v->name_ + "' is a graph output more than " + std::to_string(Value::kMaxGraphOutputs) +
             " times");
  v->graphOutputs_++;
  if (e.type_ && !v->type_) v->type_ = e.type_;
  outputs_.push_back(std::move(e));
}

void Graph::addValueInfo(ValueInfo e) {
  Value* v = e.value;
  if (v->graph_ != this) v->graph_->declaredBelow_ = true;
  if (e.type_) v->type_ = e.type_;
  v->hasValueInfo_ = true;
  valueInfo_.push_back(std::move(e));
}

void Graph::addInitializer(Value* v, std::unique_ptr<Tensor> tensor) {
  assert(v->graph_ == this && !v->isInitializer());
  if (initializers_.size() >= Value::kNoInitializer)
    throw std::length_error("more than 2^32-1 initializers in one graph");
  v->initializerIndex_ = static_cast<uint32_t>(initializers_.size());
  if (!v->type_) {
    onnx::TypeProto type;
    auto* tt = type.mutable_tensor_type();
    tt->set_elem_type(tensor->dataType());
    auto* shape = tt->mutable_shape();
    for (int64_t d : tensor->proto().dims()) shape->add_dim()->set_dim_value(d);
    v->setType(std::move(type));
  }
  initializers_.push_back({v, std::move(tensor)});
}

void Graph::addSparseInitializer(Value* v, onnx::SparseTensorProto proto) {
  v->sparseInitializer_ = true;
  sparse_.push_back({v, std::move(proto)});
}

void Graph::makeDense(Value* v, std::unique_ptr<Tensor> tensor) {
  sparse_.erase(
      std::remove_if(sparse_.begin(), sparse_.end(), [v](const SparseInitializer& s) { return s.value == v; }),
      sparse_.end());
  v->sparseInitializer_ = false;
  v->type_ = nullptr;
  addInitializer(v, std::move(tensor));
}

Node* Graph::appendNode(std::unique_ptr<Node> node) { return insertNode(nodes_.end(), std::move(node)); }

Node* Graph::insertNode(NodeList::const_iterator before, std::unique_ptr<Node> node) {
  node->graph_ = this;
  Node* raw = node.get();
  nodes_.insert(before, std::move(node));
  return raw;
}

void Graph::eraseValue(Value* v) {
  assert(v->graph_ == this);
  if (!v->uses_.empty() || v->producer_ || v->graphOutputs_ > 0 || v->graphInput_)
    fail(ExitCode::Internal, "erasing value '" + v->name_ + "' that is still defined or used");
  if (v->isInitializer()) removeInitializer(v);
  // Rare (a subgraph declares an outer value): every list below is scanned.
  if (v->hasValueInfo_ && declaredBelow_) walkGraphs([v](Graph& g) { g.removeValueInfo(v); });
  indexErase(v->name_);
  names_->erase(v->name_);
  size_t slot = v->slot_;
  std::unique_ptr<Value> gone = std::move(values_[slot]);
  if (slot + 1 != values_.size()) {
    values_[slot] = std::move(values_.back());
    values_[slot]->slot_ = static_cast<uint32_t>(slot);
  }
  values_.pop_back();
  if (!v->hasValueInfo_) return;
  // Kept alive (so no new value takes its address) until its entry is dropped.
  v->name_ = Name();
  v->slot_ = kRetired;
  retired_.push_back(std::move(gone));
  if (retired_.size() >= std::max<size_t>(64, valueInfo_.size() / 16)) dropRetiredEntries();
}

void Graph::dropRetiredEntries() const {
  std::erase_if(valueInfo_, [](const ValueInfo& vi) { return vi.value->slot_ == kRetired; });
  retired_.clear();
}

size_t Graph::removeValueInfo(const Value* v) {
  size_t removed = std::erase_if(valueInfo_, [v](const ValueInfo& vi) { return vi.value == v; });
  // Every entry of v is gone when this is its graph and no subgraph declares values of it.
  if (v->graph_ == this && !declaredBelow_) const_cast<Value*>(v)->hasValueInfo_ = false;
  return removed;
}

void Graph::removeInitializer(Value* v) {
  if (!v->isInitializer()) return;
  // In order (the output keeps the input's): the later entries move down one.
  size_t at = v->initializerIndex_;
  initializers_.erase(initializers_.begin() + static_cast<std::ptrdiff_t>(at));
  for (size_t i = at; i < initializers_.size(); ++i)
    initializers_[i].value->initializerIndex_ = static_cast<uint32_t>(i);
  v->initializerIndex_ = Value::kNoInitializer;
}

void Graph::setOutputValue(size_t index, Value* v) {
  outputs_.at(index).value->graphOutputs_--;
  outputs_[index].value = v;
  if (v->graphOutputs_ == Value::kMaxGraphOutputs)
    fail(ExitCode::Internal, "value '" + v->name_ + "' would be a graph output more than 2^29 times");
  v->graphOutputs_++;
}

void Graph::addUse(Value* v, Node* n, int index) {
  if (v) v->uses_.push_back({n, index});
}

void Graph::removeUse(Value* v, Node* n, int index) {
  if (!v) return;
  auto& uses = v->uses_;
  auto it = std::find(uses.begin(), uses.end(), Use{n, index});
  assert(it != uses.end());
  if (it != uses.end()) {
    *it = uses.back();
    uses.pop_back();
  }
}

Function* Graph::owningFunction() const {
  const Graph* g = this;
  while (g->parent_) g = g->parent_;
  return g->function_;
}

void Graph::walkGraphs(const std::function<void(Graph&)>& fn) {
  fn(*this);
  for (const auto& node : nodes_) node->forEachSubgraph([&](Graph& sub) { sub.walkGraphs(fn); });
}

// ---------------------------------------------------------------------------
// Function

std::string FunctionKey::str() const {
  std::string s = (domain.empty() ? std::string() : domain + "::") + name;
  if (!overload.empty()) s += ":" + overload;
  return s;
}

namespace {

// Fills a scope's name tables from every graph below `top` (subgraphs share them).
void fillValueNames(Graph& top, NameTable& t) {
  top.walkGraphs([&](Graph& g) {
    NameFiller::reserve(t, t.size() + g.valueCount());
    for (const auto& v : g.values()) NameFiller::add(t, v->name());
  });
}
void fillNodeNames(Graph& top, NameTable& t) {
  top.walkGraphs([&](Graph& g) {
    NameFiller::reserve(t, t.size() + g.nodeCount());
    for (const auto& n : g.nodes())
      if (!n->name().empty()) NameFiller::add(t, n->name());
  });
}

}  // namespace

Function::Function(Model* model) : body_(std::make_unique<Graph>(model, &names_, &nodeNames_, nullptr, nullptr)) {
  body_->function_ = this;
  names_.setFiller([this](NameTable& t) { fillValueNames(*body_, t); });
  nodeNames_.setFiller([this](NameTable& t) { fillNodeNames(*body_, t); });
}

std::vector<onnx::AttributeProto> Function::attributeDefaults() const {
  std::vector<onnx::AttributeProto> result;
  for (const std::string& bytes : wire::lenFields(residual_.unknown_fields(), 11)) {
    onnx::AttributeProto a;
    if (!a.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      badInput("function " + key_.str() + ": malformed attribute_proto");
    result.push_back(std::move(a));
  }
  return result;
}

std::vector<std::string> Function::attributeNames() const {
  std::vector<std::string> names(residual_.attribute().begin(), residual_.attribute().end());
  for (const auto& a : attributeDefaults()) names.push_back(a.name());
  return names;
}

std::map<std::string, int64_t> Function::opsetImports() const {
  std::map<std::string, int64_t> result;
  for (const auto& op : residual_.opset_import()) result[domainKey(op.domain())] = op.version();
  return result;
}

// ---------------------------------------------------------------------------
// Model

Model::Model()
    : graph_(std::make_unique<Graph>(this, &names_, &nodeNames_, nullptr, nullptr)),
      attributes_(std::make_unique<AttributeInterner>()) {
  names_.setFiller([this](NameTable& t) { fillValueNames(*graph_, t); });
  nodeNames_.setFiller([this](NameTable& t) { fillNodeNames(*graph_, t); });
}

Model::~Model() = default;

std::map<std::string, int64_t> Model::opsetImports() const {
  std::map<std::string, int64_t> result;
  for (const auto& op : residual_.opset_import()) result[domainKey(op.domain())] = op.version();
  return result;
}

std::optional<int64_t> Model::opsetVersion(const std::string& domain) const {
  for (const auto& op : residual_.opset_import())
    if (op.domain() == domain || (isDefaultDomain(op.domain()) && isDefaultDomain(domain))) return op.version();
  return std::nullopt;
}

void Model::setOpsetImport(const std::string& domain, int64_t version) {
  for (auto& op : *residual_.mutable_opset_import()) {
    if (op.domain() == domain || (isDefaultDomain(op.domain()) && isDefaultDomain(domain))) {
      op.set_version(version);
      return;
    }
  }
  auto* op = residual_.add_opset_import();
  op->set_domain(domain);
  op->set_version(version);
}

Function* Model::findFunction(const FunctionKey& key) const {
  auto it = functionIndex_.find(key);
  return it == functionIndex_.end() ? nullptr : it->second;
}

Function* Model::findFunction(std::string_view domain, std::string_view name, std::string_view overload) const {
  if (functionNames_.find(name) == functionNames_.end()) return nullptr;
  return findFunction(FunctionKey{std::string(domain), std::string(name), std::string(overload)});
}

Function* Model::addFunction(std::unique_ptr<Function> fn) {
  Function* raw = fn.get();
  if (!functionIndex_.emplace(fn->key(), raw).second) badInput("function " + fn->key().str() + " is defined twice");
  functionNames_[fn->key().name]++;
  functions_.push_back(std::move(fn));
  return raw;
}

void Model::removeFunction(const Function* fn) {
  functionIndex_.erase(fn->key());
  if (auto it = functionNames_.find(fn->key().name); it != functionNames_.end() && --it->second == 0)
    functionNames_.erase(it);
  functions_.erase(std::remove_if(functions_.begin(), functions_.end(),
                                  [fn](const std::unique_ptr<Function>& f) { return f.get() == fn; }),
                   functions_.end());
}

void Model::releaseNameTables() const {
  names_.release();
  nodeNames_.release();
  for (const auto& f : functions_) {
    f->names_.release();
    f->nodeNames_.release();
  }
}

void Model::walkGraphs(const std::function<void(Graph&)>& fn) {
  graph_->walkGraphs(fn);
  for (const auto& f : functions_) f->body().walkGraphs(fn);
}

}  // namespace graphrw::ir
