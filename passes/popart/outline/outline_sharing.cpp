#include "passes/popart/outline/outline_sharing.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "analysis/opsets.h"
#include "fold/fold.h"
#include "io/writer.h"
#include "support/error.h"
#include "target/popart/popart.h"

namespace graphrw::passes::outline_sharing {

using namespace ir;

namespace {

// "/encoder/layer.0" -> "encoder_layer_0"
std::string sanitize(const std::string& key) {
  std::string out;
  for (char c : key) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (ok)
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "block" : out;
}

std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> t;
  size_t start = 0;
  for (size_t k = 0; k <= s.size(); ++k)
    if (k == s.size() || s[k] == '_') {
      t.push_back(s.substr(start, k - start));
      start = k + 1;
    }
  return t;
}

// The value of a constant (initializer or Constant output) as bytes; a
// unique token for anything else (it cannot be compared, so never shared).
std::string constantKey(const Value* v) {
  if (auto t = constantOf(v)) return contentKey(*t);
  return "value:" + v->name();
}

// A node's attributes, each serialized, in name order (tensors and subgraphs as written).
std::vector<std::string> attributeKeys(const Node& n) {
  std::vector<std::string> attrs;
  bool nested = false;
  for (const auto& a : n.attributes()) nested |= a.t() || !a.tensors().empty() || a.g() || !a.graphs().empty();
  if (nested) {
    onnx::NodeProto p = nodeToProto(n);
    for (const auto& a : p.attribute()) attrs.push_back(a.SerializeAsString());
  } else {
    for (const auto& a : n.attributes()) attrs.push_back(a.proto().SerializeAsString());
  }
  std::sort(attrs.begin(), attrs.end());
  return attrs;
}

}  // namespace

Reads readsOf(const Graph& g, const Block& b) {
  Reads r;
  std::unordered_set<const Node*> members(b.nodes.begin(), b.nodes.end());
  auto outside = [&](const Value* v) {
    if (v->graph() != &g) {
      for (const Graph* inner = v->graph(); inner; inner = inner->parent())
        if (inner == &g) return false;  // defined inside one of the block's subgraphs
      return true;
    }
    return !v->producer() || !members.count(v->producer());
  };
  std::function<void(const Node&)> implicitReads = [&](const Node& n) {
    n.forEachSubgraph([&](Graph& sub) {
      for (const auto& inner : sub.nodes()) {
        for (Value* v : inner->inputs())
          if (v && outside(v) && r.implicit.emplace(v, r.slots.size()).second) r.slots.push_back(v);
        implicitReads(*inner);
      }
    });
  };
  size_t inputs = 0;
  for (const Node* n : b.nodes) inputs += n->inputs().size();
  if (inputs >= INT32_MAX) badInput("outline: block '" + b.key + "' reads more than 2^31-1 inputs");
  r.direct.reserve(b.nodes.size(), inputs);
  for (const Node* n : b.nodes) {
    r.direct.addNode(n->inputs().size());
    for (size_t j = 0; j < n->inputs().size(); ++j) {
      Value* v = n->input(j);
      if (!v || !outside(v)) continue;
      r.direct.setLast(j, static_cast<int32_t>(r.slots.size()));
      r.slots.push_back(v);
    }
    implicitReads(*n);
  }
  return r;
}

std::string signature(const Block& b, const Reads& reads) {
  std::string sig;
  for (size_t s = 0; s < reads.slots.size(); ++s) {
    const Value* v = reads.slots[s];
    sig += "S" + std::to_string(s) + ":" + typeKey(v) + ";";
    // A constant input that shapes an op inside: PopART builds the callee
    // with the first call's value, so only blocks with equal values share.
    bool shaping = false;
    for (size_t k = 0; k < b.nodes.size() && !shaping; ++k)
      for (size_t j = 0; j < reads.direct[k].size(); ++j)
        if (reads.direct[k][j] == static_cast<int32_t>(s) && popart::shapeLikeOperand(*b.nodes[k], j)) shaping = true;
    if (shaping) sig += "V" + constantKey(v) + ";";
  }
  std::unordered_map<const Value*, std::string> token;
  std::unordered_map<const Value*, size_t> outIndex;
  for (size_t j = 0; j < b.outputs.size(); ++j) outIndex[b.outputs[j]] = j;
  for (size_t k = 0; k < b.nodes.size(); ++k) {
    const Node& n = *b.nodes[k];
    sig += "N" + n.domain() + "|" + n.opType() + "|" + n.overload() + "|";
    for (const auto& a : attributeKeys(n)) sig += std::to_string(a.size()) + ":" + a;
    sig += "(";
    for (size_t j = 0; j < n.inputs().size(); ++j) {
      const Value* v = n.input(j);
      if (!v)
        sig += "-";
      else if (reads.direct[k][j] >= 0)
        sig += "s" + std::to_string(reads.direct[k][j]);
      else
        sig += token.at(v);
      sig += ",";
    }
    sig += ")->(";
    for (size_t o = 0; o < n.outputs().size(); ++o) {
      Value* v = n.output(o);
      if (!v) {
        sig += "-,";
        continue;
      }
      token[v] = "n" + std::to_string(k) + "." + std::to_string(o);
      auto it = outIndex.find(v);
      sig += token[v] + (it != outIndex.end() ? "=o" + std::to_string(it->second) : "") + ",";
    }
    sig += ");";
  }
  return sig;
}

std::vector<size_t> parameterOf(const std::vector<const Reads*>& blocks) {
  size_t n = blocks.front()->slots.size();
  std::vector<size_t> param(n);
  std::map<std::vector<const Value*>, size_t> byValues;  // the values a slot reads, block by block
  for (size_t s = 0; s < n; ++s) {
    std::vector<const Value*> values;
    values.reserve(blocks.size());
    for (const Reads* r : blocks) values.push_back(r->slots[s]);
    param[s] = byValues.emplace(std::move(values), byValues.size()).first->second;
  }
  return param;
}

std::string calleeName(const std::vector<std::string>& keys, std::set<std::string>& taken) {
  auto first = tokens(sanitize(keys.front()));
  std::vector<bool> same(first.size(), true);
  for (const auto& key : keys) {
    auto t = tokens(sanitize(key));
    if (t.size() != first.size()) {
      same.assign(first.size(), true);
      break;
    }
    for (size_t k = 0; k < t.size(); ++k) same[k] = same[k] && t[k] == first[k];
  }
  std::string base;
  for (size_t k = 0; k < first.size(); ++k)
    if (same[k]) base += (base.empty() ? "" : "_") + first[k];
  if (base.empty()) base = sanitize(keys.front());
  std::string name = base;
  for (int k = 2; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

void renameRefs(onnx::NodeProto& p, const std::unordered_map<std::string, std::string>& rename) {
  for (auto& in : *p.mutable_input())
    if (auto it = rename.find(in); it != rename.end()) in = it->second;
  for (auto& out : *p.mutable_output())
    if (auto it = rename.find(out); it != rename.end()) out = it->second;
  for (auto& a : *p.mutable_attribute()) {
    auto sub = [&](onnx::GraphProto& g) {
      for (auto& n : *g.mutable_node()) renameRefs(n, rename);
      for (auto& o : *g.mutable_output())
        if (auto it = rename.find(o.name()); it != rename.end()) o.set_name(it->second);
    };
    if (a.has_g()) sub(*a.mutable_g());
    for (auto& g : *a.mutable_graphs()) sub(g);
  }
}

// What must match for two blocks' inputs to share a body: the element type.
// Ranks and dimensions may differ in being known (the body declares the
// common, more general type); known ones that conflict split groups (ShapeProfile).
std::string typeKey(const Value* v) {
  const onnx::TypeProto* t = v->type();
  if (!t || !t->has_tensor_type()) return t ? t->SerializeAsString() : std::string("?");
  return "t" + std::to_string(t->tensor_type().elem_type());
}

ShapeProfile shapeProfile(const std::vector<Value*>& slots) {
  ShapeProfile profile;
  profile.reserve(slots.size());
  for (const Value* v : slots) {
    const onnx::TypeProto* t = v->type();
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) {
      profile.emplace_back();
      continue;
    }
    std::vector<int64_t> dims;
    for (const auto& d : t->tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    profile.emplace_back(std::move(dims));
  }
  return profile;
}

bool compatible(const ShapeProfile& a, const ShapeProfile& b) {
  if (a.size() != b.size()) return false;
  for (size_t s = 0; s < a.size(); ++s) {
    if (!a[s] || !b[s]) continue;
    if (a[s]->size() != b[s]->size()) return false;
    for (size_t d = 0; d < a[s]->size(); ++d)
      if ((*a[s])[d] >= 0 && (*b[s])[d] >= 0 && (*a[s])[d] != (*b[s])[d]) return false;
  }
  return true;
}

void merge(ShapeProfile& into, const ShapeProfile& from) {
  for (size_t s = 0; s < into.size() && s < from.size(); ++s) {
    if (!from[s]) continue;
    if (!into[s]) {
      into[s] = from[s];
      continue;
    }
    for (size_t d = 0; d < into[s]->size() && d < from[s]->size(); ++d)
      if ((*into[s])[d] < 0) (*into[s])[d] = (*from[s])[d];
  }
}

// The most specific type true of all: dimensions that agree are kept, the others left unknown.
std::optional<onnx::TypeProto> commonType(const std::vector<const Value*>& values) {
  std::optional<onnx::TypeProto> common;
  for (const Value* v : values) {
    if (!v->type()) return std::nullopt;
    if (!common) {
      common = *v->type();
      continue;
    }
    const onnx::TypeProto& t = *v->type();
    if (!common->has_tensor_type() || !t.has_tensor_type()) {
      if (common->SerializeAsString() != t.SerializeAsString()) return std::nullopt;
      continue;
    }
    auto* ct = common->mutable_tensor_type();
    if (!t.tensor_type().has_shape() || !ct->has_shape() ||
        t.tensor_type().shape().dim_size() != ct->shape().dim_size()) {
      ct->clear_shape();
      continue;
    }
    for (int d = 0; d < ct->shape().dim_size(); ++d) {
      auto* cd = ct->mutable_shape()->mutable_dim(d);
      const auto& td = t.tensor_type().shape().dim(d);
      bool same = (cd->has_dim_value() && td.has_dim_value() && cd->dim_value() == td.dim_value()) ||
                  (cd->has_dim_param() && td.has_dim_param() && cd->dim_param() == td.dim_param());
      if (!same) {
        cd->clear_dim_value();
        cd->clear_dim_param();
      }
    }
  }
  return common;
}

// PyTorch's exporter computes what every layer computes alike from graph
// inputs and constants (the attention mask's `(1 - mask) * -10000`) once, in
// the first layer, and the other layers read it from there: the first layer
// then holds ops the others do not, and they would not share a body. Nodes
// of a block that depend only on graph inputs, initializers and Constants,
// and that another block reads, move out of the block (with the same kind of
// nodes they need); the block reads their value as an input, like the others.
size_t hoistShared(Graph& g, std::vector<Block>& blocks) {
  // A node's block is its scratch (kNone outside every block): a hash map of
  // a million block nodes took about 40 MB.
  constexpr uint32_t kNone = UINT32_MAX;
  if (blocks.size() >= kNone) badInput("outline: more than 2^32-2 blocks in one graph");
  for (const auto& n : g.nodes()) n->scratch = kNone;
  for (size_t i = 0; i < blocks.size(); ++i)
    for (const Node* n : blocks[i].nodes) n->scratch = static_cast<uint32_t>(i);
  size_t hoisted = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    Block& b = blocks[i];
    std::unordered_set<const Node*> invariant;  // computes from graph inputs, initializers, Constants only
    for (const Node* n : b.nodes) {
      bool yes = !n->inputs().empty() || (isDefaultDomain(n->domain()) && n->opType() == "Constant");
      for (const Value* v : n->inputs()) {
        if (!v || v->isSource()) continue;
        const Node* p = v->producer();
        bool constant = isDefaultDomain(p->domain()) && p->opType() == "Constant";
        if (!constant && !invariant.count(p)) yes = false;
      }
      if (!n->subgraphs().empty()) yes = false;
      if (yes) invariant.insert(n);
    }
    // Those another block reads, and the invariant nodes they need.
    std::vector<const Node*> stack;
    for (const Node* n : b.nodes) {
      if (!invariant.count(n)) continue;
      // Read by its own block and by another (directly, or through an
      // Identity outside the blocks: a checkpoint on the value). A value only
      // other blocks read is this block's output to the next layer, not a
      // shared computation.
      bool shared = false, own = false;
      std::function<void(const Value*, int)> readers = [&](const Value* v, int depth) {
        for (const Use& u : v->uses()) {
          const Node* owner = ownerIn(g, u.node);
          if (owner && owner->scratch != kNone) {
            shared |= owner->scratch != i;
            own |= owner->scratch == i;
          } else if (depth == 0 && owner == u.node && u.node->opType() == "Identity" && u.node->output(0)) {
            readers(u.node->output(0), 1);
          }
        }
      };
      for (const Value* v : n->outputs())
        if (v) readers(v, 0);
      if (shared && own) stack.push_back(n);
    }
    std::unordered_set<const Node*> hoist;
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (!hoist.insert(n).second) continue;
      for (const Value* v : n->inputs())
        if (v && v->producer() && invariant.count(v->producer())) stack.push_back(v->producer());
    }
    if (hoist.empty()) continue;
    std::vector<Node*> kept;
    for (Node* n : b.nodes)
      if (!hoist.count(n)) kept.push_back(n);
    b.nodes = std::move(kept);
    fillBoundary(g, b);
    hoisted += hoist.size();
  }
  return hoisted;
}

// A checkpoint on a block's output stays in the calling graph, reading the
// Call's output: PopART never reads recompute types inside a callee.
size_t detachCheckpoints(Graph& g, Block& b) {
  std::unordered_set<const Node*> members(b.nodes.begin(), b.nodes.end());
  std::vector<Node*> kept;
  size_t detached = 0;
  for (Node* n : b.nodes) {
    bool boundary =
        popart::isCheckpoint(*n) && n->input(0) && n->input(0)->producer() && members.count(n->input(0)->producer());
    if (boundary)
      for (const Use& u : n->output(0)->uses()) boundary &= !members.count(ownerIn(g, u.node));
    if (boundary) {
      members.erase(n);
      ++detached;
    } else {
      kept.push_back(n);
    }
  }
  if (!detached) return 0;
  b.nodes = std::move(kept);
  fillBoundary(g, b);
  return detached;
}

}  // namespace graphrw::passes::outline_sharing
