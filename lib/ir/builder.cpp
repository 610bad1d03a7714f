#include "ir/builder.h"

#include <map>
#include <memory>
#include <vector>

#include "ir/access.h"
#include "ir/attribute_interner.h"
#include "ir/verifier.h"
#include "support/error.h"
#include "support/wire.h"

namespace graphrw::ir {
namespace {

// Fields newer than the ONNX 1.12 schema, read from unknown fields.
constexpr int kNodeOverload = 8;
constexpr int kFunctionValueInfo = 12;
constexpr int kFunctionOverload = 13;

std::string describe(const onnx::NodeProto& n) {
  std::string s = "node '" + n.name() + "' (" + (n.domain().empty() ? "" : n.domain() + "::") + n.op_type() + ")";
  return s;
}

}  // namespace

// Turns protobuf messages into IR objects; the one place besides the Rewriter
// that may use the IR's construction-level access.
class Builder {
 public:
  Builder(Model& model, const std::vector<Bytes>& payloads, std::shared_ptr<ExternalFiles> external)
      : model_(model), payloads_(payloads), external_(std::move(external)) {}

  void model(onnx::ModelProto& proto, wire::MainFields* mainNodes, wire::MainFields* mainValueInfo) {
    std::unique_ptr<onnx::GraphProto> graph(proto.release_graph());
    if (!graph) badInput("the model has no graph");
    loadGraph(*graph, model_.graph(), mainNodes, mainValueInfo);
    for (auto& fp : *proto.mutable_functions()) model_.addFunction(function(fp));
    proto.clear_functions();
    model_.mutableResidual() = std::move(proto);
    model_.setExternalFiles(external_);
  }

 private:
  friend std::unique_ptr<Function> buildFunction(Model&, onnx::FunctionProto);
  friend Attribute buildAttribute(Model&, Graph&, Node*, onnx::AttributeProto);
  std::unique_ptr<Tensor> tensor(onnx::TensorProto&& tp) {
    auto t = std::make_unique<Tensor>();
    if (!tp.unknown_fields().empty() && wire::hasField(tp.unknown_fields(), wire::kPayloadField)) {
      auto index = wire::lastVarint(tp.unknown_fields(), wire::kPayloadField);
      if (!index || *index >= payloads_.size()) badInput("internal payload index out of range");
      t->setRawView(payloads_[*index]);
      tp.mutable_unknown_fields()->DeleteByNumber(wire::kPayloadField);
    }
    if (!tp.unknown_fields().empty()) tp.mutable_unknown_fields()->DeleteByNumber(wire::kPayloadCountField);
    if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
      t->setExternalFiles(external_);
      external_->check(parseExternalRef(tp), tp.name());
    }
    t->mutableProto() = std::move(tp);
    return t;
  }

  Attribute attribute(onnx::AttributeProto&& ap, Graph& owner, Node* node) {
    Attribute a;
    if (ap.has_t()) a.objects().t = tensor(std::move(*ap.mutable_t()));
    for (auto& t : *ap.mutable_tensors()) a.objects().tensors.push_back(std::move(*tensor(std::move(t))));
    if (ap.has_g()) {
      a.objects().g = std::make_unique<Graph>(&model_, &owner.mutableNames(), &owner.mutableNodeNames(), &owner, node);
      loadGraph(*ap.mutable_g(), *a.g());
    }
    for (auto& gp : *ap.mutable_graphs()) {
      auto& g = a.objects().graphs.emplace_back(
          std::make_unique<Graph>(&model_, &owner.mutableNames(), &owner.mutableNodeNames(), &owner, node));
      loadGraph(gp, *g);
    }
    ap.clear_t();
    ap.clear_tensors();
    ap.clear_g();
    ap.clear_graphs();
    IrAccess::attributeInterner(model_).assign(a, std::move(ap));
    return a;
  }

  // Creates the node and its outputs; inputs and attributes come in wireNodes().
  Node* node(onnx::NodeProto& np, Graph& g) {
    auto n = IrAccess::newNode();
    std::string overload;
    if (!np.unknown_fields().empty())
      for (auto& o : wire::lenFields(np.unknown_fields(), kNodeOverload)) overload = o;
    IrAccess::setIdentity(*n, IrAccess::makeName(g, np.name()), np.op_type(), np.domain(), std::move(overload));
    n->setPresence(static_cast<uint8_t>((np.has_name() ? Node::kName : 0) | (np.has_op_type() ? Node::kOpType : 0) |
                                        (np.has_domain() ? Node::kDomain : 0)));
    Node* raw = g.appendNode(std::move(n));
    for (int i = 0; i < np.output_size(); ++i) {
      const std::string& name = np.output(i);
      if (name.empty()) {
        IrAccess::outputs(*raw).push_back(nullptr);
        continue;
      }
      if (Value* existing = g.findLocal(name)) {
        std::string first = existing->producer()       ? "node '" + existing->producer()->name() + "'"
                            : existing->isGraphInput() ? "a graph input"
                                                       : "an initializer";
        badInput("value '" + name + "' is produced twice: by " + first + " and by " + describe(np));
      }
      Value* v = g.addValue(name);
      IrAccess::setProducer(*v, raw, i);
      IrAccess::outputs(*raw).push_back(v);
    }
    if (!np.name().empty()) g.mutableNodeNames().insert(np.name());
    return raw;
  }

  void wireNode(onnx::NodeProto& np, Node* n, Graph& g) {
    auto& inputs = IrAccess::inputs(*n);
    inputs.reserve(np.input_size());
    for (int i = 0; i < np.input_size(); ++i) {
      const std::string& name = np.input(i);
      Value* v = nullptr;
      if (!name.empty()) {
        v = g.find(name);
        if (!v) badInput(describe(np) + " reads value '" + name + "' that nobody produces");
        Graph::addUse(v, n, i);
      }
      inputs.push_back(v);
    }
    n->attrs_.reserve(static_cast<size_t>(np.attribute_size()));
    for (auto& ap : *np.mutable_attribute()) n->attrs_.push_back(attribute(std::move(ap), g, n));
    np.clear_input();
    np.clear_output();
    np.clear_attribute();
    if (!np.unknown_fields().empty()) np.mutable_unknown_fields()->DeleteByNumber(kNodeOverload);
    np.clear_name();
    np.clear_op_type();
    np.clear_domain();
    if (np.ByteSizeLong() > 0) n->mutableResidual() = std::move(np);
  }

  // Creates the nodes in order, wiring each at once while the graph is in
  // order so far (every input already defined here, no subgraph to build) and
  // freeing its proto: loading a million-node graph then never holds every
  // NodeProto and every Node together. From the first node that reads a name
  // not yet defined here (a later node's, or an enclosing graph's) or holds a
  // subgraph, the rest are wired after all are created, in order, as before.
  // next(i, spare) gives node i's proto; `spare` is a wired one to reuse.
  template <typename Next>
  void nodes(size_t count, Next next, Graph& g) {
    std::vector<std::pair<std::unique_ptr<onnx::NodeProto>, Node*>> later;
    std::unique_ptr<onnx::NodeProto> spare;
    for (size_t i = 0; i < count; ++i) {
      std::unique_ptr<onnx::NodeProto> np = next(i, std::move(spare));
      Node* n = node(*np, g);
      if (later.empty() && wiresNow(*np, g)) {
        wireNode(*np, n, g);
        spare = std::move(np);
      } else {
        later.emplace_back(std::move(np), n);
      }
    }
    for (auto& [np, n] : later) wireNode(*np, n, g);
  }

  template <typename NodeList>
  void nodes(NodeList& list, Graph& g) {
    std::vector<std::unique_ptr<onnx::NodeProto>> protos(static_cast<size_t>(list.size()));
    {
      std::vector<onnx::NodeProto*> raw(protos.size());
      list.ExtractSubrange(0, list.size(), raw.data());  // the caller's list owns no arena: these are ours now
      for (size_t i = 0; i < raw.size(); ++i) protos[i].reset(raw[i]);
    }
    nodes(
        protos.size(), [&](size_t i, std::unique_ptr<onnx::NodeProto>) { return std::move(protos[i]); }, g);
  }

  // The main graph's nodes as the wire stripper split them off: parsed one
  // at a time into a reused proto.
  void nodes(wire::MainFields& stream, Graph& g) {
    nodes(
        stream.size(),
        [&](size_t i, std::unique_ptr<onnx::NodeProto> spare) {
          if (!spare) spare = std::make_unique<onnx::NodeProto>();
          std::string_view bytes = stream.next();
          if (!spare->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
            badInput("not an ONNX model (protobuf parse failed in the graph's node " + std::to_string(i) + ")");
          return spare;
        },
        g);
  }

  static bool wiresNow(const onnx::NodeProto& np, const Graph& g) {
    for (const auto& a : np.attribute())
      if (a.has_g() || a.graphs_size() > 0) return false;
    for (const auto& name : np.input())
      if (!name.empty() && !g.findLocal(name)) return false;
    return true;
  }

  template <typename Repeated>
  static void release(Repeated* field) {
    Repeated empty;
    field->Swap(&empty);
  }

  Value* defineSource(Graph& g, const std::string& name, const char* what) {
    if (name.empty()) {
      std::string message = what;  // not std::string(what) + "...": GCC 12 -O2 warns falsely (-Warray-bounds)
      message += " with no name";
      badInput(message);
    }
    if (Value* v = g.findLocal(name)) return v;
    return g.addValue(name);
  }

  void loadGraph(onnx::GraphProto& gp, Graph& g, wire::MainFields* splitNodes = nullptr,
                 wire::MainFields* splitValueInfo = nullptr) {
    size_t values = static_cast<size_t>(gp.input_size() + gp.initializer_size() + gp.value_info_size());
    if (splitNodes) values += splitNodes->size();  // about one output each
    for (const auto& n : gp.node()) values += static_cast<size_t>(n.output_size());
    // A sixteenth more: a pass adding a few values (a checkpoint per layer) to a
    // large graph then does not rebuild its value index and array.
    g.reserve(values + values / 16);
    for (auto& vi : *gp.mutable_input()) {
      Value* v = g.findLocal(vi.name());
      if (v && v->isGraphInput()) badInput("graph input '" + vi.name() + "' is listed twice");
      v = defineSource(g, vi.name(), "a graph input");
      g.addInput(v, std::move(vi));
    }
    for (auto& tp : *gp.mutable_initializer()) {
      Value* v = defineSource(g, tp.name(), "an initializer");
      if (v->isInitializer()) badInput("initializer '" + tp.name() + "' is defined twice");
      g.addInitializer(v, tensor(std::move(tp)));
    }
    for (auto& sp : *gp.mutable_sparse_initializer()) {
      Value* v = defineSource(g, sp.values().name(), "a sparse initializer");
      g.addSparseInitializer(v, std::move(sp));
    }
    nodes(*gp.mutable_node(), g);  // empty when the stripper split them off
    if (splitNodes) {
      nodes(*splitNodes, g);
      splitNodes->release();
    }
    for (auto& vi : *gp.mutable_output()) {
      Value* v = g.find(vi.name());
      if (!v) badInput("graph output '" + vi.name() + "' is produced by nothing");
      g.addOutput(v, std::move(vi));
    }
    for (auto& vi : *gp.mutable_value_info()) valueInfo(g, std::move(vi));  // empty when split off
    if (splitValueInfo && splitValueInfo->size() > 0) {
      g.valueInfo_.reserve(g.valueInfo_.size() + splitValueInfo->size());
      onnx::ValueInfoProto vi;  // reused: its type is moved into the model's table, the rest kept only when set
      for (size_t i = 0; i < splitValueInfo->size(); ++i) {
        std::string_view bytes = splitValueInfo->next();
        if (!vi.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
          badInput("not an ONNX model (protobuf parse failed in the graph's value_info " + std::to_string(i) + ")");
        valueInfo(g, std::move(vi));
      }
      splitValueInfo->release();
    }
    // clear_*() would keep the emptied elements allocated for reuse, for the
    // life of the residual: free them.
    release(gp.mutable_node());
    release(gp.mutable_input());
    release(gp.mutable_output());
    release(gp.mutable_initializer());
    release(gp.mutable_sparse_initializer());
    release(gp.mutable_value_info());
    g.setResidual(std::move(gp));
  }

  void valueInfo(Graph& g, onnx::ValueInfoProto&& vi) {
    Value* v = g.find(vi.name());
    if (!v) v = g.addValue(vi.name());  // value_info for a value nobody defines: kept as it was
    g.addValueInfo(v, std::move(vi));
  }

  std::unique_ptr<Function> function(onnx::FunctionProto& fp) {
    auto fn = std::make_unique<Function>(&model_);
    IrAccess::key(*fn) = FunctionKey{fp.domain(), fp.name(), ""};
    const auto& unknown = fp.unknown_fields();
    for (auto& o : wire::lenFields(unknown, kFunctionOverload)) IrAccess::key(*fn).overload = o;
    std::string where = "function " + IrAccess::key(*fn).str();
    Graph& body = fn->body();
    try {
      for (const auto& name : fp.input()) {
        if (body.findLocal(name)) badInput("input '" + name + "' is listed twice");
        onnx::ValueInfoProto vi;
        vi.set_name(name);
        body.addInput(defineSource(body, name, "an input"), std::move(vi));
      }
      nodes(*fp.mutable_node(), body);
      for (const auto& name : fp.output()) {
        Value* v = body.find(name);
        if (!v) badInput("output '" + name + "' is produced by nothing");
        onnx::ValueInfoProto vi;
        vi.set_name(name);
        body.addOutput(v, std::move(vi));
      }
      for (const std::string& bytes : wire::lenFields(unknown, kFunctionValueInfo)) {
        onnx::ValueInfoProto vi;
        if (!vi.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) badInput("malformed value_info");
        Value* v = body.find(vi.name());
        if (!v) v = body.addValue(vi.name());
        body.addValueInfo(v, std::move(vi));
      }
    } catch (const Error& e) {
      badInput(where + ": " + e.what());
    }
    fp.clear_input();
    fp.clear_output();
    release(fp.mutable_node());
    fp.mutable_unknown_fields()->DeleteByNumber(kFunctionValueInfo);
    fp.mutable_unknown_fields()->DeleteByNumber(kFunctionOverload);
    fn->mutableResidual() = std::move(fp);
    return fn;
  }

  Model& model_;
  const std::vector<Bytes>& payloads_;
  std::shared_ptr<ExternalFiles> external_;
};

namespace {

// A function that calls itself, directly or through others, cannot be
// inlined, checked or run: "call cycle: d::A -> d::B -> d::A". Iterative, so
// a chain of any length is fine.
void rejectCallCycles(const Model& model) {
  const auto& fns = model.functions();
  std::map<const Function*, size_t> index;
  for (size_t i = 0; i < fns.size(); ++i) index[fns[i].get()] = i;
  std::vector<std::vector<size_t>> calls(fns.size());
  for (size_t i = 0; i < fns.size(); ++i)
    fns[i]->body().walkGraphs([&](const Graph& g) {
      for (const auto& n : g.nodes())
        if (const Function* f = model.findFunction(n->domain(), n->opType(), n->overload()))
          calls[i].push_back(index[f]);
    });
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> state(fns.size(), kNew);
  for (size_t root = 0; root < fns.size(); ++root) {
    if (state[root] != kNew) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // function, next call to follow
    state[root] = kOpen;
    while (!stack.empty()) {
      auto& [f, next] = stack.back();
      if (next == calls[f].size()) {
        state[f] = kDone;
        stack.pop_back();
        continue;
      }
      size_t callee = calls[f][next++];
      if (state[callee] == kOpen) {
        std::string cycle;
        bool on = false;
        for (const auto& frame : stack) {
          on = on || frame.first == callee;
          if (on) cycle += fns[frame.first]->key().str() + " -> ";
        }
        badInput("call cycle: " + cycle + fns[callee]->key().str());
      }
      if (state[callee] == kNew) {
        state[callee] = kOpen;
        stack.push_back({callee, 0});
      }
    }
  }
}

}  // namespace

std::unique_ptr<ir::Model> buildModel(onnx::ModelProto& proto, const std::vector<Bytes>& payloads,
                                      std::shared_ptr<ir::ExternalFiles> external, wire::MainFields* mainNodes,
                                      wire::MainFields* mainValueInfo) {
  auto model = std::make_unique<Model>();
  Builder(*model, payloads, external).model(proto, mainNodes, mainValueInfo);
  // A graph whose nodes are out of order is accepted as it is (and reported by
  // the verifier); a cycle is not a graph at all.
  model->walkGraphs([](Graph& g) {
    if (auto cycle = findCycle(g)) badInput(*cycle);
  });
  rejectCallCycles(*model);
  return model;
}

std::unique_ptr<ir::Function> buildFunction(ir::Model& model, onnx::FunctionProto proto) {
  std::vector<Bytes> none;
  auto fn = Builder(model, none, model.externalFiles()).function(proto);
  if (auto cycle = findCycle(fn->body())) badInput("function " + fn->key().str() + ": " + *cycle);
  return fn;
}

ir::Attribute buildAttribute(ir::Model& model, ir::Graph& owner, ir::Node* node, onnx::AttributeProto proto) {
  std::vector<Bytes> none;
  return Builder(model, none, model.externalFiles()).attribute(std::move(proto), owner, node);
}

}  // namespace graphrw::ir
