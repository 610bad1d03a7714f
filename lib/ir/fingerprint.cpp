#include "ir/fingerprint.h"

#include <cstring>
#include <string>
#include <string_view>

namespace graphrw::ir {
namespace {

// Not cryptographic: a change detector that reads 8 bytes a step, so hashing
// a model's weights costs about what reading them does.
class Hasher {
 public:
  void u64(uint64_t w) {
    h_ ^= w * 0x9E3779B97F4A7C15ull;
    h_ = ((h_ << 31) | (h_ >> 33)) * 0xC2B2AE3D27D4EB4Full;
  }
  void bytes(const char* p, size_t n) {
    u64(n);
    stream(p, n);
    finish();
  }
  // Bytes given in parts (a tensor's pieces) hash as the same bytes given whole:
  // u64(total), then stream() each part, then finish().
  void stream(const char* p, size_t n) {
    size_t i = 0;
    while (carried_ > 0 && i < n) {  // fill the word a previous part began
      carry_[carried_++] = p[i++];
      if (carried_ == 8) {
        uint64_t w;
        std::memcpy(&w, carry_, 8);
        u64(w);
        carried_ = 0;
      }
    }
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      u64(w);
    }
    for (; i < n; ++i) carry_[carried_++] = p[i];
  }
  void finish() {
    uint64_t tail = 0;
    std::memcpy(&tail, carry_, carried_);
    carried_ = 0;
    u64(tail);
  }
  void str(std::string_view s) { bytes(s.data(), s.size()); }
  void message(const google::protobuf::MessageLite& m) { str(m.SerializeAsString()); }
  uint64_t value() const { return h_ ^ (h_ >> 29); }

 private:
  uint64_t h_ = 0x243F6A8885A308D3ull;
  char carry_[8] = {};
  size_t carried_ = 0;
};

void tensor(Hasher& h, const Tensor& t) {
  h.message(t.proto());
  // A view and pieces holding the same bytes hash alike: the same weight either way.
  const auto& pieces = t.rawPieces();
  h.u64(t.rawView().has_value() || !pieces.empty());
  if (t.rawView()) h.bytes(t.rawView()->data, t.rawView()->size);
  if (!pieces.empty()) {
    h.u64(t.storedBytes());
    for (const Bytes& b : pieces) h.stream(b.data, b.size);
    h.finish();
  }
}

void graph(Hasher& h, const Graph& g);

// One node. In the model's digest (`whole`) its values go by name and its
// subgraphs by content; in a node's own digest both go by identity: a value
// renamed and a subgraph's nodes are edits of their own.
void node(Hasher& h, const Node& n, bool whole) {
  auto value = [&](const Value* v) {
    if (!whole)
      h.u64(reinterpret_cast<uintptr_t>(v));
    else
      h.str(v ? std::string_view(v->name()) : std::string_view("\0<missing>", 10));
  };
  auto subgraph = [&](const Graph* g) {
    if (!whole)
      h.u64(reinterpret_cast<uintptr_t>(g));
    else if (g)
      graph(h, *g);
  };
  h.str(n.name());
  h.str(n.opType());
  h.str(n.domain());
  h.str(n.overload());
  h.u64(n.presence());
  h.u64(n.inputs().size());
  for (const Value* v : n.inputs()) value(v);
  h.u64(n.outputs().size());
  for (const Value* v : n.outputs()) value(v);
  h.u64(n.attributes().size());
  for (const Attribute& a : n.attributes()) {
    h.message(a.proto());
    h.u64(a.t() != nullptr);
    if (a.t()) tensor(h, *a.t());
    h.u64(a.tensors().size());
    for (const Tensor& t : a.tensors()) tensor(h, t);
    h.u64(a.g() != nullptr);
    subgraph(a.g());
    h.u64(a.graphs().size());
    for (const auto& sub : a.graphs()) subgraph(sub.get());
  }
  h.message(n.residual());
}

void infos(Hasher& h, const std::vector<ValueInfo>& list) {
  h.u64(list.size());
  for (const ValueInfo& vi : list) {
    h.str(vi.value->name());
    h.message(vi.typeOrEmpty());
    h.u64(vi.type() != nullptr);
    h.message(vi.rest() ? *vi.rest() : onnx::ValueInfoProto::default_instance());
  }
}

void graph(Hasher& h, const Graph& g) {
  h.message(g.residual());
  infos(h, g.inputs());
  infos(h, g.outputs());
  infos(h, g.valueInfo());
  h.u64(g.initializers().size());
  for (const Initializer& i : g.initializers()) {
    h.str(i.value->name());
    tensor(h, *i.tensor);
  }
  h.u64(g.sparseInitializers().size());
  for (const SparseInitializer& s : g.sparseInitializers()) {
    h.str(s.value->name());
    h.message(s.proto);
  }
  h.u64(g.nodeCount());
  for (const auto& n : g.nodes()) node(h, *n, true);
}

}  // namespace

uint64_t nodeFingerprint(const Node& n) {
  Hasher h;
  node(h, n, false);
  return h.value();
}

uint64_t fingerprint(const Model& model) {
  Hasher h;
  h.message(model.residual());
  graph(h, model.graph());
  h.u64(model.functions().size());
  for (const auto& f : model.functions()) {
    h.str(f->key().str());
    h.message(f->residual());
    graph(h, f->body());
  }
  return h.value();
}

PartFingerprints partFingerprints(const Model& model) {
  Hasher ir, opsets, inits, outs, ins, infosH, fns, docs;
  auto imports = [&](const std::map<std::string, int64_t>& list) {
    for (const auto& [domain, version] : list) {
      opsets.str(domain);
      opsets.u64(static_cast<uint64_t>(version));
    }
  };
  const Graph& g = model.graph();
  ir.u64(static_cast<uint64_t>(model.irVersion()));
  imports(model.opsetImports());
  docs.str(model.residual().doc_string());
  docs.str(g.residual().doc_string());
  inits.u64(g.initializers().size());
  for (const Initializer& i : g.initializers()) {
    inits.str(i.value->name());
    tensor(inits, *i.tensor);
  }
  inits.u64(g.sparseInitializers().size());
  for (const SparseInitializer& s : g.sparseInitializers()) {
    inits.str(s.value->name());
    inits.message(s.proto);
  }
  infos(infosH, g.valueInfo());
  infos(outs, g.outputs());
  infos(ins, g.inputs());
  fns.u64(model.functions().size());
  for (const auto& f : model.functions()) {
    fns.str(f->key().str());
    imports(f->opsetImports());
    docs.str(f->residual().doc_string());
  }
  return {ir.value(),  opsets.value(), inits.value(), outs.value(),
          ins.value(), infosH.value(), fns.value(),   docs.value()};
}

}  // namespace graphrw::ir
