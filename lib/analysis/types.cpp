#include "analysis/types.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <list>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "analysis/extensions.h"
#include "analysis/opsets.h"
#include "analysis/schemas.h"
#include "io/writer.h"

namespace graphrw {

using namespace ir;

namespace {

// Runs ONNX's shape inference on the main graph; calls `give(name, type)` for
// every value name it found a type for when `wantedName(name)` says so.
using Untyped = std::unordered_map<std::string_view, std::vector<Value*>>;

template <typename Wanted, typename Give>
void infer(Model& model, Wanted wantedName, Give give) {
  ext::registerSchemas();
  auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  onnx::ModelProto proto;
  buildProtoWithoutPayloads(model, proto);
  spdlog::debug("types: proto built {:.3f}s", since());
  try {
    onnx::ShapeInferenceOptions options(false, 0, false);
    onnx::shape_inference::InferShapes(proto, schemaRegistry(), options);
  } catch (const std::exception& e) {
    spdlog::debug("shape inference failed: {}", e.what());
  }
  spdlog::debug("types: ONNX shape inference done {:.3f}s", since());
  std::function<void(const onnx::GraphProto&)> collect = [&](const onnx::GraphProto& gp) {
    for (const auto& vi : gp.value_info())
      if (vi.type().value_case() != 0 && wantedName(vi.name())) give(vi.name(), vi.type());
    for (const auto& vi : gp.output())
      if (vi.type().value_case() != 0 && wantedName(vi.name())) give(vi.name(), vi.type());
    for (const auto& n : gp.node())
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect(a.g());
        for (const auto& sub : a.graphs()) collect(sub);
      }
  };
  collect(proto.graph());
  spdlog::debug("types: collected {:.3f}s", since());
}

// Types from ONNX's whole-model inference for the values listed by name.
void inferNamed(Rewriter& rw, Untyped& untyped) {
  infer(
      rw.model(), [&](const std::string& name) { return untyped.count(name) > 0; },
      [&](const std::string& name, const onnx::TypeProto& type) {
        for (Value* v : untyped[name])
          if (!v->type()) rw.setType(v, type);
      });
}

}  // namespace

namespace {

// ONNX's per-op inference functions run straight on the IR: no ModelProto is
// built, so a million-node graph costs one pass over its nodes.
class NodeContext final : public onnx::InferenceContext {
 public:
  NodeContext(const Node& node, std::vector<const onnx::TypeProto*> inputTypes,
              std::vector<const onnx::TensorProto*> inputData)
      : inputTypes_(std::move(inputTypes)), inputData_(std::move(inputData)), outputs_(node.outputs().size()) {
    for (const auto& a : node.attributes()) {
      if (a.t() || !a.tensors().empty()) {
        onnx::AttributeProto full = a.proto();
        if (a.t()) *full.mutable_t() = a.t()->proto();  // metadata: type and dims
        for (const auto& t : a.tensors()) *full.add_tensors() = t.proto();
        owned_.push_back(std::move(full));
        attrs_[a.name()] = &owned_.back();
      } else {
        attrs_[a.name()] = &a.proto();
      }
    }
  }
  const onnx::AttributeProto* getAttribute(const std::string& name) const override {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : it->second;
  }
  size_t getNumInputs() const override { return inputTypes_.size(); }
  const onnx::TypeProto* getInputType(size_t i) const override {
    return i < inputTypes_.size() ? inputTypes_[i] : nullptr;
  }
  const onnx::TensorProto* getInputData(size_t i) const override {
    return i < inputData_.size() ? inputData_[i] : nullptr;
  }
  size_t getNumOutputs() const override { return outputs_.size(); }
  onnx::TypeProto* getOutputType(size_t i) override { return &outputs_.at(i); }
  onnx::GraphInferencer* getGraphAttributeInferencer(const std::string&) override { return nullptr; }
  const onnx::SparseTensorProto* getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto* getSymbolicInput(size_t) const override { return nullptr; }
  std::vector<onnx::TypeProto>& outputs() { return outputs_; }

 private:
  std::vector<const onnx::TypeProto*> inputTypes_;
  std::vector<const onnx::TensorProto*> inputData_;
  std::vector<onnx::TypeProto> outputs_;
  std::list<onnx::AttributeProto> owned_;
  std::unordered_map<std::string, const onnx::AttributeProto*> attrs_;
};

// A small tensor's data (initializers and Constants): the inputs shape
// inference reads values from (Reshape's shape, Slice's starts, ...). Tensors
// read in place from the file are copied into `cache` when small.
const onnx::TensorProto* dataOf(const Value* v, std::unordered_map<const Value*, onnx::TensorProto>& cache) {
  const Tensor* t = nullptr;
  if (v->isInitializer()) {
    t = v->initializer();
  } else if (const Node* p = v->producer(); p && p->opType() == "Constant" && isDefaultDomain(p->domain())) {
    if (const Attribute* a = p->attribute("value"); a && a->t()) t = a->t();
  }
  if (!t) return nullptr;
  if (!t->rawView() && t->rawPieces().empty() && !t->isExternal()) return &t->proto();
  constexpr uint64_t kSmall = 64 * 1024;
  if (t->storedBytes() > kSmall) return nullptr;
  if (auto it = cache.find(v); it != cache.end()) return &it->second;
  onnx::TensorProto copy = t->proto();
  copy.clear_data_location();
  copy.clear_external_data();
  auto raw = t->rawCopy();
  copy.set_raw_data(raw ? std::move(*raw) : t->externalBytes().copy());
  return &cache.emplace(v, std::move(copy)).first->second;
}

// Types for the untyped outputs of the main graph's nodes, in order. Returns
// whether every node with an untyped output got its types. With `keep`, a type
// this call gives a value outside `keep` is forgotten once every node of g that
// reads it has been visited: only the frontier's types are held at once (a
// million-node graph would otherwise keep a TypeProto per value).
// With `typedInputsOnly`, a node some of whose inputs have no type is left
// alone (whole-model inference may type it better: the output of a call).
bool inferOnIr(Rewriter& rw, Graph& g, const std::unordered_set<const Value*>* keep = nullptr,
               bool typedInputsOnly = false) {
  Model& model = rw.model();
  ext::registerSchemas();
  auto scope = scopeOpsets(model, g);
  bool complete = true;
  std::unordered_map<const Value*, onnx::TensorProto> cache;
  std::unordered_map<const Value*, size_t> pending;  // typed here, not kept: reads in g not visited yet
  auto typed = [&](Value* v) {
    if (!keep || keep->count(v)) return;
    size_t reads = 0;
    for (const Use& u : v->uses()) reads += u.node->graph() == &g;
    if (reads == 0)
      rw.forgetType(v);
    else
      pending.emplace(v, reads);
  };
  auto visited = [&](const Node& n) {
    for (Value* in : n.inputs()) {
      auto it = in ? pending.find(in) : pending.end();
      if (it == pending.end() || --it->second > 0) continue;
      rw.forgetType(in);
      cache.erase(in);
      pending.erase(it);
    }
  };
  auto inferNode = [&](Node& n) {
    bool needed = false;
    for (Value* v : n.outputs()) needed |= v && !v->type();
    if (!needed) return;
    std::string domain = isDefaultDomain(n.domain()) ? "" : n.domain();
    auto version = scope.find(domain);
    const onnx::OpSchema* schema =
        version == scope.end() ? nullptr : findSchema(n.opType(), static_cast<int>(version->second), domain);
    if (!schema || !schema->has_type_and_shape_inference_function()) {
      complete = false;
      return;
    }
    if (typedInputsOnly)
      for (Value* in : n.inputs())
        if (in && !in->type()) {
          complete = false;
          return;
        }
    std::vector<const onnx::TypeProto*> types;
    std::vector<const onnx::TensorProto*> data;
    for (Value* in : n.inputs()) {
      types.push_back(in ? in->type() : nullptr);
      data.push_back(in ? dataOf(in, cache) : nullptr);
    }
    NodeContext ctx(n, std::move(types), std::move(data));
    try {
      schema->GetTypeAndShapeInferenceFunction()(ctx);
    } catch (const std::exception& e) {
      spdlog::debug("types: {} ({}): {}", n.name(), n.opType(), e.what());
      complete = false;
      return;
    }
    for (size_t i = 0; i < n.outputs().size(); ++i)
      if (Value* v = n.output(i); v && !v->type()) {
        if (ctx.outputs()[i].value_case() == 0) {
          complete = false;
          continue;
        }
        rw.setType(v, std::move(ctx.outputs()[i]));
        typed(v);
      }
  };
  for (const auto& owned : g.nodes()) {
    inferNode(*owned);
    if (keep) visited(*owned);
  }
  return complete;
}

}  // namespace

void inferMissingTypes(Rewriter& rw) {
  Model& model = rw.model();
  // ONNX's inference functions node by node on the IR first, for nodes whose
  // inputs are typed: no ModelProto (a million-node graph took 1.6 GB and
  // 10 s through ONNX's whole-model inference). What they leave (calls of
  // local functions and what reads them, subgraphs) goes through ONNX's
  // whole-model inference, by name.
  model.graph().walkGraphs([&](Graph& g) { inferOnIr(rw, g, nullptr, true); });
  Untyped untyped;
  model.graph().walkGraphs([&](Graph& g) {
    for (const auto& v : g.values())
      if (!v->type()) untyped[v->name()].push_back(v.get());
  });
  if (!untyped.empty()) inferNamed(rw, untyped);
}

void inferMissingTypes(Rewriter& rw, const std::vector<Value*>& wanted) {
  auto missing = [&] {
    for (Value* v : wanted)
      if (v && !v->type()) return true;
    return false;
  };
  if (!missing()) return;
  std::unordered_set<const Value*> keep(wanted.begin(), wanted.end());
  inferOnIr(rw, rw.model().graph(), &keep);
  // What the per-node pass cannot type (calls of local functions, values in
  // subgraphs) goes through ONNX's whole-model inference.
  Untyped untyped;
  for (Value* v : wanted)
    if (v && !v->type()) untyped[v->name()].push_back(v);
  if (!untyped.empty()) inferNamed(rw, untyped);
}

}  // namespace graphrw

namespace graphrw {

void inferInOrder(Rewriter& rw) {
  rw.model().graph().walkGraphs([&](Graph& g) { inferOnIr(rw, g); });
}

void inferFunctionTypes(Rewriter& rw) {
  Model& model = rw.model();
  auto order = functionsCalleesFirst(model);
  std::reverse(order.begin(), order.end());  // callers first
  // Call sites: nodes anywhere that call a function.
  auto callsOf = [&](const Function* f) {
    std::vector<Node*> calls;
    model.walkGraphs([&](Graph& g) {
      for (const auto& n : g.nodes())
        if (model.findFunction(n->domain(), n->opType(), n->overload()) == f) calls.push_back(n.get());
    });
    return calls;
  };
  // Merges b into a: false when they differ beyond tensor dimensions.
  auto merge = [](onnx::TypeProto& a, const onnx::TypeProto& b) {
    if (!a.has_tensor_type() || !b.has_tensor_type()) return a.SerializeAsString() == b.SerializeAsString();
    auto& ta = *a.mutable_tensor_type();
    const auto& tb = b.tensor_type();
    if (ta.elem_type() != tb.elem_type()) return false;
    if (!ta.has_shape() || !tb.has_shape() || ta.shape().dim_size() != tb.shape().dim_size()) {
      ta.clear_shape();
      return true;
    }
    for (int d = 0; d < ta.shape().dim_size(); ++d) {
      auto* da = ta.mutable_shape()->mutable_dim(d);
      if (da->SerializeAsString() != tb.shape().dim(d).SerializeAsString()) da->Clear();
    }
    return true;
  };
  inferOnIr(rw, model.graph());
  // Twice: a body's calls are typed once their callees' outputs are.
  for (int round = 0; round < 2; ++round) {
    for (Function* f : order) {
      auto calls = callsOf(f);
      if (calls.empty()) continue;
      Graph& body = f->body();
      for (size_t i = 0; i < body.inputs().size(); ++i) {
        Value* in = body.inputs()[i].value;
        if (in->type()) continue;
        // The call sites whose type is known must agree on the element type
        // (the others are typically fed by an earlier call of the same
        // function); dimensions they disagree on are left unknown.
        std::optional<onnx::TypeProto> t;
        bool agree = true;
        for (Node* c : calls) {
          const onnx::TypeProto* ct = c->input(i) ? c->input(i)->type() : nullptr;
          if (!ct) continue;
          if (!t) {
            t = *ct;
            continue;
          }
          agree &= merge(*t, *ct);
        }
        if (t && agree) rw.setType(in, std::move(*t));
      }
      size_t typed = 0;
      std::string untypedNames;
      for (const auto& in : body.inputs()) {
        typed += in.value->type() != nullptr;
        if (!in.value->type()) untypedNames += " " + in.value->name();
      }
      spdlog::debug("types: function {}: {} of {} inputs typed from {} call sites; untyped:{}", f->key().str(), typed,
                    body.inputs().size(), calls.size(), untypedNames);
      inferOnIr(rw, body);
      for (Node* c : calls)
        for (size_t i = 0; i < c->outputs().size() && i < body.outputs().size(); ++i) {
          Value* out = c->output(i);
          const onnx::TypeProto* t = body.outputs()[i].value->type();
          if (out && !out->type() && t) rw.setType(out, *t);
        }
      for (Node* c : calls) inferOnIr(rw, *c->graph());
    }
  }
}

std::optional<std::vector<int64_t>> staticShape(const ir::Value* v) {
  const onnx::TypeProto* t = v ? v->type() : nullptr;
  if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const auto& d : t->tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

namespace {

// Whether `now` says what `old` did and more: same element type and rank, old's fixed sizes kept.
bool refines(const onnx::TypeProto& now, const onnx::TypeProto& old) {
  if (!now.has_tensor_type() || !old.has_tensor_type()) return false;
  const auto &a = now.tensor_type(), &b = old.tensor_type();
  if (a.elem_type() != b.elem_type()) return false;
  if (!b.has_shape()) return true;
  if (a.shape().dim_size() != b.shape().dim_size()) return false;
  for (int i = 0; i < a.shape().dim_size(); ++i)
    if (b.shape().dim(i).has_dim_value() && a.shape().dim(i).dim_value() != b.shape().dim(i).dim_value()) return false;
  return true;
}

}  // namespace

bool fullyStatic(const onnx::TypeProto& t) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return false;
  for (const auto& d : t.tensor_type().shape().dim())
    if (!d.has_dim_value()) return false;
  return true;
}

size_t refreshDynamicTypes(Rewriter& rw) {
  struct Dynamic {
    Graph* graph;
    Value* value;
    onnx::TypeProto old;  // the declared type when there is one, else the known one
    bool declared;
  };
  std::vector<Dynamic> dynamic;
  rw.model().graph().walkGraphs([&](Graph& g) {
    // Declarations: a value's known type may be static (inferred) while what
    // the file declares for it is not.
    std::unordered_map<const Value*, const onnx::TypeProto*> declared;
    for (const auto& vi : g.valueInfo()) declared[vi.value] = &vi.typeOrEmpty();
    for (const auto& out : g.outputs()) declared[out.value] = &out.typeOrEmpty();
    for (const auto& v : g.values()) {
      if (!v->producer()) continue;
      auto d = declared.find(v.get());
      const onnx::TypeProto* written = d == declared.end() ? nullptr : d->second;
      if (written && written->has_tensor_type() && !fullyStatic(*written))
        dynamic.push_back({&g, v.get(), *written, true});
      else if (v->type() && v->type()->has_tensor_type() && !staticShape(v.get()))
        dynamic.push_back({&g, v.get(), *v->type(), false});
    }
  });
  if (dynamic.empty()) return 0;
  std::vector<Value*> wanted;
  for (auto& d : dynamic)
    if (!staticShape(d.value)) {
      rw.forgetType(d.value);
      wanted.push_back(d.value);
    }
  if (!wanted.empty()) {
    inferInOrder(rw);
    inferMissingTypes(rw, wanted);
  }
  size_t refreshed = 0;
  for (auto& d : dynamic) {
    if (d.value->type() && staticShape(d.value) && refines(*d.value->type(), d.old)) {
      if (!d.declared) continue;  // known better now, which nothing writes
      rw.declareType(*d.graph, d.value, *d.value->type());
      ++refreshed;
    } else if (!d.value->type() || !staticShape(d.value)) {
      rw.setType(d.value, std::move(d.old));
    }
  }
  return refreshed;
}

std::string typeString(const onnx::TypeProto* type) {
  if (!type) return "?";
  switch (type->value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto& t = type->tensor_type();
      std::string s = dataTypeName(t.elem_type());
      if (!t.has_shape()) return s;
      s += "[";
      for (int i = 0; i < t.shape().dim_size(); ++i) {
        const auto& d = t.shape().dim(i);
        if (i) s += ",";
        s += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
      }
      return s + "]";
    }
    case onnx::TypeProto::kSequenceType:
      return "seq(" + typeString(&type->sequence_type().elem_type()) + ")";
    case onnx::TypeProto::kOptionalType:
      return "optional(" + typeString(&type->optional_type().elem_type()) + ")";
    case onnx::TypeProto::kMapType:
      return "map";
    case onnx::TypeProto::kSparseTensorType:
      return std::string("sparse ") + dataTypeName(type->sparse_tensor_type().elem_type());
    default:
      return "?";
  }
}

}  // namespace graphrw
