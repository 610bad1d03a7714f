#include "analysis/weights.h"

#include <spdlog/spdlog.h>

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
      return rw_.addInitializer(g, name, std::make_unique<Tensor>(toTensorProto(t, name)));  // its type comes from the tensor
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

// Long: per candidate, the checks that it may fold (foldable, outside functions, small enough),
// the evaluation and the edits, which share their locals.
void WeightFolder::fold(const std::vector<Node*>& candidates) {
  std::unordered_set<Node*> done;
  for (Node* n : candidates) {
    // Large weights are read again when needed rather than held: folding the
    // weights of a whole model then holds one node's inputs and results.
    for (const Value* v : large_) hostCache_.erase(v);
    large_.clear();
    if (!isFoldable(*n)) continue;
    Graph& g = *n->graph();
    if (g.owningFunction()) continue;
    std::vector<const HostTensor*> inputs;
    bool allConstant = true, large = false;
    bool parameter = false;
    for (Value* v : n->inputs()) {  // weights too large to fold are never read
      if (v && v->isInitializer() && v->initializer()->storedBytes() > maxBytes_) large = true;
      if (v && v->isInitializer() && keepParameters_) parameter = true;
    }
    if (parameter) continue;
    if (large) {
      tooLarge_++;
      continue;
    }
    for (Value* v : n->inputs()) {
      if (!v) {
        inputs.push_back(nullptr);
        continue;
      }
      const HostTensor* t = constantValue(v);
      if (!t) {
        allConstant = false;
        break;
      }
      inputs.push_back(t);
    }
    if (!allConstant || n->inputs().empty()) continue;
    std::string key = foldKey(*n);
    auto memo = memo_.find(key);
    std::vector<Value*> results;
    if (memo != memo_.end()) {
      results = memo->second;
    } else {
      std::string why;
      auto outs = evaluate(*n, inputs, why, maxBytes_);
      if (!outs) {
        spdlog::debug("fold: {} not folded: {}", nodeLabel(*n), why);
        if (why.find("size limit") != std::string::npos) tooLarge_++;
        continue;
      }
      bool over = false;
      for (const auto& o : *outs) over |= o.data.size() > maxBytes_;
      if (over) {
        spdlog::debug("fold: {} not folded: its result is over {} bytes", nodeLabel(*n), maxBytes_);
        tooLarge_++;
        continue;
      }
      for (size_t i = 0; i < outs->size() && i < n->outputs().size(); ++i) {
        Value* out = n->output(i);
        if (!out) {
          results.push_back(nullptr);
          continue;
        }
        std::string name = out->name();
        rw_.renameValue(out, name + "/folded");
        results.push_back(constant(g, n, (*outs)[i], name));
        if ((*outs)[i].data.size() <= kSpillBytes) hostCache_.emplace(results.back(), std::move((*outs)[i]));
      }
      memo_[key] = results;
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

}  // namespace graphrw
