#include "ir/inliner.h"

#include "ir/access.h"
#include "ir/attribute_interner.h"
#include "support/error.h"

namespace graphrw {

using namespace ir;

std::string joinName(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) return std::string(name);
  std::string joined(prefix);
  if (name.empty() || name.front() != '/') joined += '/';
  return joined.append(name);
}

AttributeEnv AttributeEnv::of(const Node& call) {
  AttributeEnv env;
  for (const auto& a : call.attributes()) env.call[a.name()] = &a;
  return env;
}

Value* InlineCopier::mapped(const Value* v) const {
  if (!v) return nullptr;
  auto it = result_.valueMap.find(v);
  // Not defined in the body: an outer-scope value of the enclosing graph.
  return it == result_.valueMap.end() ? const_cast<Value*>(v) : it->second;
}

Value* InlineCopier::freshValue(Graph& target, const Value* inner) {
  Value* v = target.addFreshValue(joinName(prefix_, inner->name()));
  if (inner->type()) v->setType(*inner->type());
  result_.valueMap[inner] = v;
  return v;
}

Node* InlineCopier::node(const Node& src, Graph& target, const Node* before,
                         const std::map<const Value*, Value*>& bound) {
  Rewriter::NodeSpec spec;
  spec.name = joinName(prefix_, src.name().empty() ? std::string_view(src.opType()) : src.name().view());
  spec.opType = src.opType();
  spec.domain = src.domain();
  for (const Value* in : src.inputs()) spec.inputs.push_back(mapped(in));
  spec.outputs.assign(src.outputs().size(), std::string());
  Node* n = rw_.createNode(target, before, std::move(spec));
  if (!src.overload().empty()) IrAccess::setIdentity(*n, n->name(), n->opType(), n->domain(), src.overload());
  if (src.hasResidual()) n->mutableResidual() = src.residual();
  n->setPresence(src.presence());
  for (size_t i = 0; i < src.outputs().size(); ++i) {
    const Value* out = src.outputs()[i];
    if (!out) continue;
    auto b = bound.find(out);
    if (b != bound.end()) {
      rw_.adoptOutput(n, i, b->second);
      result_.valueMap[out] = b->second;
    } else {
      Value* v = freshValue(target, out);
      IrAccess::outputs(*n)[i] = v;
      IrAccess::setProducer(*v, n, static_cast<int>(i));
    }
  }
  n->attrs_.reserve(src.attributes().size());
  for (const auto& a : src.attributes())
    if (auto copy = attribute(a, target, n)) n->attrs_.push_back(std::move(*copy));
  return n;
}

std::optional<Attribute> InlineCopier::attribute(const Attribute& a, Graph& owner, Node* node) {
  if (a.isRef()) {
    const std::string& ref = a.proto().ref_attr_name();
    if (auto it = env_.call.find(ref); it != env_.call.end()) {
      Attribute copy = plainCopy(*it->second, owner, node);
      onnx::AttributeProto named = copy.proto();
      named.set_name(a.name());
      interner(owner).assign(copy, std::move(named));
      return copy;
    }
    if (auto it = env_.defaults.find(ref); it != env_.defaults.end()) {
      onnx::AttributeProto value = it->second;
      value.set_name(a.name());
      value.clear_ref_attr_name();
      if (value.has_g() || value.graphs_size() > 0 || value.tensors_size() > 0)
        badInput("attribute '" + ref + "': graph- or tensor-list-valued defaults are not supported");
      Attribute copy;
      if (value.has_t()) {
        copy.objects().t = std::make_unique<Tensor>(value.t());
        value.clear_t();
      }
      interner(owner).assign(copy, std::move(value));
      return copy;
    }
    return std::nullopt;  // neither set nor defaulted: the op's schema default applies
  }
  return deepCopy(a, owner, node);
}

Attribute InlineCopier::plainCopy(const Attribute& a, Graph& owner, Node* node) {
  InlineCopier identity(rw_, AttributeEnv{}, prefix_, scratch_);
  return identity.deepCopy(a, owner, node);
}

Attribute InlineCopier::deepCopy(const Attribute& a, Graph& owner, Node* node) {
  Attribute copy;
  copy.shareProto(a);
  if (a.t()) copy.objects().t = std::make_unique<Tensor>(*a.t());
  if (!a.tensors().empty()) copy.objects().tensors = a.tensors();
  if (a.g()) copy.objects().g = graph(*a.g(), owner, node);
  for (const auto& g : a.graphs()) copy.objects().graphs.push_back(graph(*g, owner, node));
  return copy;
}

std::unique_ptr<Graph> InlineCopier::graph(const Graph& src, Graph& parent, Node* parentNode) {
  auto g =
      std::make_unique<Graph>(parent.model(), &parent.mutableNames(), &parent.mutableNodeNames(), &parent, parentNode);
  g->setResidual(onnx::GraphProto(src.residual()));
  for (const auto& vi : src.inputs()) g->addInput(freshValue(*g, vi.value), vi);
  for (const auto& init : src.initializers()) {
    Value* v = result_.valueMap.count(init.value) ? result_.valueMap[init.value] : freshValue(*g, init.value);
    g->addInitializer(v, std::make_unique<Tensor>(*init.tensor));
  }
  for (const auto& sp : src.sparseInitializers()) {
    Value* v = result_.valueMap.count(sp.value) ? result_.valueMap[sp.value] : freshValue(*g, sp.value);
    g->addSparseInitializer(v, sp.proto);
  }
  for (const auto& n : src.nodes()) node(*n, *g, nullptr, {});
  for (const auto& vi : src.outputs()) g->addOutput(mapped(vi.value), vi);
  for (const auto& vi : src.valueInfo())
    if (Value* v = mapped(vi.value); v->graph() == g.get()) g->addValueInfo(v, vi);
  return g;
}

AttributeInterner& InlineCopier::interner(Graph& g) { return IrAccess::attributeInterner(*g.model()); }

InlineResult inlineBody(Rewriter& rw, Node* call, const Graph& body, const AttributeEnv& env,
                        const std::string& prefix) {
  return InlineCopier::inlineBody(rw, call, body, env, prefix);
}

InlineResult InlineCopier::inlineBody(Rewriter& rw, Node* call, const Graph& body, const AttributeEnv& env,
                                      const std::string& prefix) {
  Graph& target = *call->graph();
  InlineResult result;
  InlineCopier copier(rw, env, prefix, result);

  if (call->inputs().size() > body.inputs().size())
    badInput(nodeLabel(*call) + " has " + std::to_string(call->inputs().size()) + " inputs but its body takes " +
             std::to_string(body.inputs().size()));
  if (call->outputs().size() > body.outputs().size())
    badInput(nodeLabel(*call) + " has " + std::to_string(call->outputs().size()) + " outputs but its body gives " +
             std::to_string(body.outputs().size()));

  // Formal inputs bind to the actual values; a missing optional stays missing.
  for (size_t i = 0; i < body.inputs().size(); ++i) result.valueMap[body.inputs()[i].value] = call->input(i);

  // Constants of a callee graph (initializers) join the enclosing scope.
  for (const auto& init : body.initializers()) {
    if (!target.parent() && target.owningFunction()) {  // a function body itself holds no initializers
      Rewriter::NodeSpec spec{
          joinName(prefix, init.value->name()), "Constant", "", {}, {joinName(prefix, init.value->name())}};
      Node* c = rw.createNode(target, call, std::move(spec));
      Attribute value;
      onnx::AttributeProto meta;
      meta.set_name("value");
      meta.set_type(onnx::AttributeProto::TENSOR);
      IrAccess::attributeInterner(*target.model()).assign(value, std::move(meta));
      value.objects().t = std::make_unique<Tensor>(*init.tensor);
      value.objects().t->mutableProto().clear_name();
      c->attrs_.push_back(std::move(value));
      result.valueMap[init.value] = c->output(0);
    } else {
      Value* v = copier.freshValue(target, init.value);
      target.addInitializer(v, std::make_unique<Tensor>(*init.tensor));
    }
  }
  if (!body.sparseInitializers().empty())
    badInput(nodeLabel(*call) + ": inlining a body with sparse initializers is not supported");

  // Body outputs produced by a body node take over the call's output values
  // (so their names never change); the others go through an Identity.
  std::map<const Value*, Value*> bound;
  std::vector<std::pair<size_t, const Value*>> viaIdentity;
  for (size_t j = 0; j < call->outputs().size(); ++j) {
    Value* actual = call->output(j);
    if (!actual) continue;
    const Value* formal = body.outputs()[j].value;
    bool producedInBody = formal->producer() && formal->graph() == &body;
    if (producedInBody && !bound.count(formal))
      bound[formal] = actual;
    else
      viaIdentity.emplace_back(j, formal);
  }

  for (const auto& n : body.nodes()) result.created.push_back(copier.node(*n, target, call, bound));

  for (const auto& [j, formal] : viaIdentity) {
    Value* actual = call->output(j);
    Value* source = copier.mapped(formal);
    if (!source) badInput(nodeLabel(*call) + ": output " + std::to_string(j) + " of its body is a missing input");
    Rewriter::NodeSpec spec{joinName(prefix, "Identity"), "Identity", "", {source}, {""}};
    Node* id = rw.createNode(target, call, std::move(spec));
    rw.adoptOutput(id, 0, actual);
    result.created.push_back(id);
  }

  for (const auto& vi : body.valueInfo()) {
    auto it = result.valueMap.find(vi.value);
    if (it == result.valueMap.end() || !it->second || it->second->graph() != &target) continue;
    if (bound.count(vi.value)) continue;  // the call's own outputs keep their own value_info
    if (it->second->isGraphInput() || it->second->graphOutputCount() > 0) continue;
    target.addValueInfo(it->second, vi);
  }

  rw.eraseNode(call);
  return result;
}

}  // namespace graphrw
