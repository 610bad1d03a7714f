#include "fold/weights.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "support/error.h"

namespace graphrw {

using namespace ir;

const HostTensor* WeightFolder::constantValue(Value* v) {
  if (!v) return nullptr;
  if (auto it = hostCache_.find(v); it != hostCache_.end()) return &it->second;
  // Strings (and types without a fixed element size) are never folded: not constants here.
  if (v->isInitializer()) {
    if (elementSize(v->initializer()->dataType()) == 0) return nullptr;
    if (v->initializer()->storedBytes() > kSpillBytes) large_.push_back(v);  // dropped after the node that read it
    return &hostCache_.emplace(v, readTensor(*v->initializer())).first->second;
  }
  Node* p = v->producer();
  if (!p || p->opType() != "Constant" || !isDefaultDomain(p->domain()) || p->attributes().size() != 1) return nullptr;
  const Attribute& a = p->attributes()[0];
  if (a.name() == "value" && a.t()) {
    if (elementSize(a.t()->dataType()) == 0) return nullptr;
    return &hostCache_.emplace(v, readTensor(*a.t())).first->second;
  }
  HostTensor t;
  auto put = [&](auto value) {
    size_t at = t.data.size();
    t.data.resize(at + sizeof(value));
    std::memcpy(t.data.data() + at, &value, sizeof(value));
  };
  if (a.name() == "value_float") {
    t.type = onnx::TensorProto::FLOAT;
    put(a.proto().f());
  } else if (a.name() == "value_int") {
    t.type = onnx::TensorProto::INT64;
    put(a.proto().i());
  } else if (a.name() == "value_floats") {
    t.type = onnx::TensorProto::FLOAT;
    t.dims = {a.proto().floats_size()};
    for (float f : a.proto().floats()) put(f);
  } else if (a.name() == "value_ints") {
    t.type = onnx::TensorProto::INT64;
    t.dims = {a.proto().ints_size()};
    for (int64_t i : a.proto().ints()) put(i);
  } else {
    return nullptr;
  }
  return &hostCache_.emplace(v, std::move(t)).first->second;
}

Value* WeightFolder::constant(Graph& g, Node* before, const HostTensor& t, const std::string& name) {
  if (!g.owningFunction() && !keepParameters_) {
    created_++;
    if (t.data.size() <= kSpillBytes)
      return rw_.addInitializer(g, name,
                                std::make_unique<Tensor>(toTensorProto(t, name)));  // its type comes from the tensor
    // A large result (a concatenated weight) goes to the spill file: held as
    // page cache until the writer copies it, never in memory all at once.
    HostTensor meta{t.type, t.dims, {}};
    return rw_.addInitializer(g, name, std::make_unique<Tensor>(toTensorProto(meta, name), Buffer::spill(t.data)));
  }
  Node* c = rw_.createNode(g, before, {name, "Constant", "", {}, {name}});
  onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(onnx::AttributeProto::TENSOR);
  *value.mutable_t() = toTensorProto(t, "");
  rw_.setAttribute(c, value);
  onnx::TypeProto type;  // what an initializer's tensor would declare
  type.mutable_tensor_type()->set_elem_type(t.type);
  auto* shape = type.mutable_tensor_type()->mutable_shape();
  for (int64_t d : t.dims) shape->add_dim()->set_dim_value(d);
  rw_.setType(c->output(0), type);
  return c->output(0);
}

namespace {

// A tensor's stored bytes as views: its own (a view of the file, pieces,
// external data) or, for data held in the TensorProto's fields (small), a copy.
std::vector<Bytes> storedViews(const Tensor& t) {
  if (t.rawView()) return {*t.rawView()};
  if (!t.rawPieces().empty()) return t.rawPieces();
  if (t.isExternal()) return {t.externalBytes()};
  return {Bytes::copyOf(readTensor(t).data)};
}

// Reads consecutive byte ranges of a list of views, in order, as views.
class ViewCursor {
 public:
  explicit ViewCursor(std::vector<Bytes> views) : views_(std::move(views)) {}
  // Appends the next `size` bytes to `out`, joining a view that continues the last one.
  void take(uint64_t size, std::vector<Bytes>& out) {
    while (size > 0) {
      const Bytes& v = views_.at(index_);
      uint64_t n = std::min<uint64_t>(size, v.size - at_);
      Bytes piece{v.owner, v.data + at_, static_cast<size_t>(n)};
      if (!out.empty() && out.back().owner == piece.owner && out.back().data + out.back().size == piece.data)
        out.back().size += piece.size;
      else if (n > 0)
        out.push_back(std::move(piece));
      size -= n;
      at_ += n;
      if (at_ == v.size) {
        index_++;
        at_ = 0;
      }
    }
  }

 private:
  std::vector<Bytes> views_;
  size_t index_ = 0;
  uint64_t at_ = 0;
};

}  // namespace

// Concat of large initializers, the qkv-fusion's weights: the result is a
// list of views of its inputs' bytes (rows interleaved as Concat orders
// them), never read nor held; the writer copies each piece from its file.
// Nothing when the node is not such a Concat (evaluate() then folds it or says why).
std::optional<Value*> WeightFolder::streamConcat(Node& n) {
  if (keepParameters_ || n.opType() != "Concat" || n.outputs().size() != 1 || !n.output(0)) return std::nullopt;
  const Tensor* first = n.input(0) && n.input(0)->isInitializer() ? n.input(0)->initializer() : nullptr;
  if (!first || elementSize(first->dataType()) == 0) return std::nullopt;
  const size_t rank = first->dims().size();
  const Attribute* a = n.attribute("axis");
  int64_t axis = a ? a->proto().i() : 0;
  if (rank == 0 || axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank)) return std::nullopt;
  const size_t at = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis);
  std::vector<int64_t> dims = first->dims();
  dims[at] = 0;
  for (Value* v : n.inputs()) {
    if (!v || !v->isInitializer() || v->initializer()->dataType() != first->dataType()) return std::nullopt;
    std::vector<int64_t> d = v->initializer()->dims();
    if (d.size() != rank) return std::nullopt;
    for (size_t k = 0; k < rank; ++k)
      if (d[k] < 0 || (k != at && d[k] != first->dims()[k])) return std::nullopt;
    dims[at] += d[at];
  }
  HostTensor meta{first->dataType(), dims, {}};
  const uint64_t es = elementSize(meta.type);
  uint64_t outer = 1, total = 0;
  for (size_t k = 0; k < at; ++k) outer *= static_cast<uint64_t>(dims[k]);
  if (__builtin_mul_overflow(static_cast<uint64_t>(meta.count()), es, &total)) return std::nullopt;
  // Small results are computed (and cached for later folds); rows under 512
  // bytes on average make more views than a copy would cost.
  if (total <= kSpillBytes || total > maxBytes_ || outer * n.inputs().size() * 512 > total) return std::nullopt;
  std::vector<ViewCursor> cursors;
  std::vector<uint64_t> rows;  // each input's bytes per outer index
  for (Value* v : n.inputs()) {
    const Tensor& t = *v->initializer();
    uint64_t bytes = static_cast<uint64_t>(t.elementCount()) * es;
    std::vector<Bytes> views = storedViews(t);
    uint64_t held = 0;
    for (const Bytes& b : views) held += b.size;
    if (held != bytes) return std::nullopt;  // evaluate() names the mismatch
    cursors.emplace_back(std::move(views));
    rows.push_back(outer ? bytes / outer : 0);
  }
  auto pieces = std::make_shared<std::vector<Bytes>>();
  for (uint64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < cursors.size(); ++i) cursors[i].take(rows[i], *pieces);
  Value* out = n.output(0);
  std::string name = out->name().str();
  rw_.renameValue(out, name + "/folded");
  created_++;
  return rw_.addInitializer(*n.graph(), name, std::make_unique<Tensor>(toTensorProto(meta, name), std::move(pieces)));
}

// Reads the node's inputs and evaluates it into new constants; false when an
// input is not constant or the node does not fold.
bool WeightFolder::evaluateInto(Node& n, std::vector<Value*>& results) {
  std::vector<const HostTensor*> inputs;
  for (Value* v : n.inputs()) {
    const HostTensor* t = v ? constantValue(v) : nullptr;
    if (v && !t) return false;
    inputs.push_back(t);
  }
  std::string why;
  auto outs = evaluate(n, inputs, why, maxBytes_);
  if (!outs) {
    spdlog::debug("fold: {} not folded: {}", nodeLabel(n), why);
    if (why.find("size limit") != std::string::npos) tooLarge_++;
    return false;
  }
  for (const auto& o : *outs)
    if (o.data.size() > maxBytes_) {
      spdlog::debug("fold: {} not folded: its result is over {} bytes", nodeLabel(n), maxBytes_);
      tooLarge_++;
      return false;
    }
  for (size_t i = 0; i < outs->size() && i < n.outputs().size(); ++i) {
    Value* out = n.output(i);
    if (!out) {
      results.push_back(nullptr);
      continue;
    }
    std::string name = out->name().str();
    rw_.renameValue(out, name + "/folded");
    results.push_back(constant(*n.graph(), &n, (*outs)[i], name));
    if ((*outs)[i].data.size() <= kSpillBytes) hostCache_.emplace(results.back(), std::move((*outs)[i]));
  }
  return true;
}

void WeightFolder::fold(const std::vector<Node*>& candidates) {
  std::unordered_set<Node*> done;
  for (Node* n : candidates) {
    // Large weights are read again when needed rather than held: folding the
    // weights of a whole model then holds one node's inputs and results.
    for (const Value* v : large_) hostCache_.erase(v);
    large_.clear();
    if (!isFoldable(*n) || n->graph()->owningFunction() || n->inputs().empty()) continue;
    bool large = false, parameter = false;
    for (Value* v : n->inputs()) {  // weights too large to fold are never read
      if (v && v->isInitializer() && v->initializer()->storedBytes() > maxBytes_) large = true;
      if (v && v->isInitializer() && keepParameters_) parameter = true;
    }
    if (parameter) continue;
    if (large) {
      tooLarge_++;
      continue;
    }
    // Most candidates read a computed value: cheaply left alone before any key is built.
    auto constantSource = [](const Value* v) {
      if (!v || v->isInitializer()) return true;
      const Node* p = v->producer();
      return p && p->opType() == "Constant" && isDefaultDomain(p->domain());
    };
    if (!std::all_of(n->inputs().begin(), n->inputs().end(), constantSource)) continue;
    // The same op on the same values was folded already (its inputs were constants then).
    std::string key = foldKey(*n);
    std::vector<Value*> results;
    if (auto memo = memo_.find(key); memo != memo_.end()) {
      results = memo->second;
    } else if (auto streamed = streamConcat(*n)) {
      results = {*streamed};
      memo_[key] = results;
    } else if (evaluateInto(*n, results)) {
      memo_[key] = results;
    } else {
      continue;
    }
    for (size_t i = 0; i < n->outputs().size(); ++i)
      if (Value* out = n->output(i)) {
        if (i >= results.size() || !results[i]) continue;
        rw_.replaceAllUsesWith(out, results[i], /*graphOutputs=*/true);
      }
    for (Value* v : n->inputs())
      if (v && v->isInitializer()) dangling_.insert(v);
    // Erased after the loop: values (and so the keys of the caches) stay put while folding.
    done.insert(n);
    folded_++;
    perOp_[n->opType()]++;
  }
  // Folded nodes, then the Constants only they read, last first.
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    Node* n = *it;
    if (!done.count(n) && !(n->opType() == "Constant" && isDefaultDomain(n->domain()))) continue;
    bool unused = true;
    for (Value* v : n->outputs())
      if (v && (!v->uses().empty() || v->graphOutputCount() > 0)) unused = false;
    if (!unused) continue;
    rw_.eraseNode(n);
  }
  hostCache_.clear();
  large_.clear();
  memo_.clear();
}

// Same op, same attributes, same input values, same graph: the same result.
std::string WeightFolder::foldKey(const Node& n) const {
  std::string key = n.opType() + "|" + std::to_string(reinterpret_cast<uintptr_t>(n.graph()));
  for (const auto& a : n.attributes()) key += "|" + a.proto().SerializeAsString();
  for (Value* v : n.inputs()) key += "|" + std::to_string(reinterpret_cast<uintptr_t>(v));
  key += "|" + std::to_string(n.outputs().size());
  return key;
}

size_t pruneUnusedInitializers(Rewriter& rw, const std::set<Value*>& candidates) {
  size_t removed = 0;
  for (Value* v : candidates) {
    if (!v->isInitializer() || !v->uses().empty() || v->graphOutputCount() > 0 || v->isGraphInput()) continue;
    rw.eraseInitializer(v);
    removed++;
  }
  return removed;
}

size_t forwardWeightIdentities(ir::Rewriter& rw, ir::Graph& g) {
  std::vector<ir::Node*> aliases;
  for (const auto& n : g.nodes()) {
    if (n->opType() != "Identity" || !ir::isDefaultDomain(n->domain()) || n->inputs().size() != 1) continue;
    const ir::Value* in = n->input(0);
    ir::Value* out = n->output(0);
    if (!in || !out || !in->isInitializer() || in->isGraphInput() || in->graph() != &g) continue;
    if (out->graphOutputCount() > 0) continue;
    bool annotated = false;
    for (const auto& a : n->attributes()) annotated |= a.name().starts_with("__");
    if (!annotated) aliases.push_back(n.get());
  }
  for (ir::Node* n : aliases) {
    rw.replaceAllUsesWith(n->output(0), n->input(0));
    rw.eraseNode(n);
  }
  return aliases.size();
}

}  // namespace graphrw
