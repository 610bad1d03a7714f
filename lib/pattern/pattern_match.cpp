// Finding a pattern's matches: a backtracking search over a match graph
// compiled to indices, with an undo trail (no copy of the match state per
// step), a memo of structural fit per (pattern node, graph node, input order)
// and a memo of failures keyed by the state the failure could depend on, so a
// commutative chain is not retried in both orders level after level. A step
// budget ends a search the memos cannot tame with an error, not a hang.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "pattern/pattern.h"
#include "pattern/pattern_detail.h"
#include "support/error.h"
#include "support/flat_u64_map.h"

namespace graphrw {

using namespace ir;
using pattern_detail::CompiledNode;
using pattern_detail::CompiledPattern;
using pattern_detail::Ref;

namespace {

class Matcher {
 public:
  Matcher(const CompiledPattern& c, const FlatPointerSet<Node>& taken, uint64_t maxSteps, std::string rule)
      : c_(c),
        taken_(taken),
        maxSteps_(maxSteps),
        rule_(std::move(rule)),
        formal_(c.formals.size()),
        bound_(c.nodes.size()) {}

  // A match of the whole pattern whose anchor is `n`; the state stays bound
  // until the next call.
  bool matchAt(Node* n) {
    std::fill(formal_.begin(), formal_.end(), nullptr);
    std::fill(bound_.begin(), bound_.end(), nullptr);
    used_.clear();
    trail_.clear();
    fitsHere_.clear();
    steps_ = 0;
    at_ = n;
    return matchNode(c_.anchor, n) && matchRest();
  }

  const std::vector<Value*>& formals() const { return formal_; }
  const std::vector<Node*>& nodes() const { return bound_; }

 private:
  struct Undo {
    bool node;
    int index;
  };

  void step() {
    if (++steps_ <= maxSteps_) return;
    fail(ExitCode::Unsupported, rule_ + ": matching at " + nodeLabel(*at_) + " took more than " +
                                    std::to_string(maxSteps_) +
                                    " steps (max_match_steps, --max-match-steps); raise the budget or make the "
                                    "rule less ambiguous (\"commutative\": false, constants in the match)");
  }

  void bindFormal(int i, Value* v) {
    formal_[static_cast<size_t>(i)] = v;
    trail_.push_back({false, i});
  }
  void bindNode(int q, Node* n) {
    bound_[static_cast<size_t>(q)] = n;
    used_.insert(n);
    trail_.push_back({true, q});
  }
  void undo(size_t mark) {
    while (trail_.size() > mark) {
      Undo u = trail_.back();
      trail_.pop_back();
      if (u.node) {
        used_.erase(bound_[static_cast<size_t>(u.index)]);
        bound_[static_cast<size_t>(u.index)] = nullptr;
      } else {
        formal_[static_cast<size_t>(u.index)] = nullptr;
      }
    }
  }

  static Value* input(Node* n, size_t i, bool swapped) { return n->input(swapped ? 1 - i : i); }

  // Whether pattern node q can match n with its inputs in this order, looking
  // at structure only (ops, attributes, constants, arity), whatever is bound:
  // a pure function of its arguments, memoised.
  // Misfits are kept for the whole search; fits only for this anchor's
  // attempt (a pair that fitted is mostly taken with its match: a million
  // matches would otherwise leave a million entries).
  bool fits(int q, Node* n, bool swapped) {
    const uint64_t key = pairKey(q, n, swapped);
    if (misfits_.find(key)) return false;
    if (fitsHere_.find(key)) return true;
    step();
    bool ok = computeFits(q, n, swapped);
    (ok ? fitsHere_ : misfits_)[key] = true;
    return ok;
  }

  bool fitsEither(int q, Node* n) {
    return fits(q, n, false) || (c_.nodes[static_cast<size_t>(q)].commutative && fits(q, n, true));
  }

  bool computeFits(int q, Node* n, bool swapped) {
    const CompiledNode& pn = c_.nodes[static_cast<size_t>(q)];
    if (pn.op != n->opType() || !pattern_detail::sameDomain(pn.domain, n->domain())) return false;
    if (pn.inputs.size() != n->inputs().size() || pn.outputs > n->outputs().size()) return false;
    if (!n->subgraphs().empty()) return false;
    for (const auto& [name, serialised] : pn.attributes) {
      const Attribute* have = n->attribute(name);
      if (!have || have->proto().SerializeAsString() != serialised) return false;
    }
    for (size_t i = 0; i < pn.inputs.size(); ++i) {
      const Ref& r = pn.inputs[i];
      Value* v = input(n, i, swapped);
      if (r.kind == Ref::Empty) {
        if (v) return false;
        continue;
      }
      if (!v || r.kind == Ref::Undefined) return false;
      if (r.kind == Ref::Constant) {
        const auto& want = c_.nodes[static_cast<size_t>(r.index)].value;
        auto have = want ? constantOf(v) : std::nullopt;
        if (!have || !pattern_detail::sameConstant(*want, *have)) return false;
      } else if (r.kind == Ref::Output) {
        Node* p = v->producer();
        if (!p || p->output(static_cast<size_t>(r.output)) != v || !fitsEither(r.index, p)) return false;
      }
    }
    return true;
  }

  // The pattern nodes and formals q's inputs reach: what a failure of q can depend on.
  const std::pair<std::vector<int>, std::vector<int>>& cone(int q) {
    auto& slot = cones_[q];
    if (!slot.first.empty()) return slot;
    std::vector<char> seenNode(c_.nodes.size()), seenFormal(c_.formals.size());
    std::vector<int> stack{q};
    seenNode[static_cast<size_t>(q)] = 1;
    while (!stack.empty()) {
      int at = stack.back();
      stack.pop_back();
      slot.first.push_back(at);
      for (const Ref& r : c_.nodes[static_cast<size_t>(at)].inputs) {
        if (r.kind == Ref::Formal && !seenFormal[static_cast<size_t>(r.index)]++) slot.second.push_back(r.index);
        if (r.kind == Ref::Output && !seenNode[static_cast<size_t>(r.index)]++) stack.push_back(r.index);
      }
    }
    return slot;
  }

  std::string signature(int q, Node* n) {
    const auto& [nodes, formals] = cone(q);
    std::string key;
    key.reserve((2 + nodes.size() + formals.size()) * sizeof(void*));
    auto add = [&](const void* p) { key.append(reinterpret_cast<const char*>(&p), sizeof p); };
    add(reinterpret_cast<const void*>(static_cast<uintptr_t>(q)));
    add(n);
    for (int x : nodes) add(bound_[static_cast<size_t>(x)]);
    for (int f : formals) add(formal_[static_cast<size_t>(f)]);
    return key;
  }

  bool matchRef(const Ref& r, Value* v) {
    switch (r.kind) {
      case Ref::Empty:
        return v == nullptr;
      case Ref::Undefined:
        return false;
      case Ref::Constant:
        return v != nullptr;  // its value was checked by fits()
      case Ref::Formal: {
        if (!v) return false;
        Value* have = formal_[static_cast<size_t>(r.index)];
        if (have) return have == v;
        bindFormal(r.index, v);
        return true;
      }
      case Ref::Output: {
        Node* p = v ? v->producer() : nullptr;
        return p && p->output(static_cast<size_t>(r.output)) == v && matchNode(r.index, p);
      }
    }
    return false;
  }

  bool matchNode(int q, Node* n) {
    step();
    if (Node* b = bound_[static_cast<size_t>(q)]) return b == n;
    if (used_.contains(n) || taken_.contains(n)) {
      ++hits_;  // a failure that depends on what else is bound: not memoised
      return false;
    }
    const CompiledNode& pn = c_.nodes[static_cast<size_t>(q)];
    bool straight = fits(q, n, false), swapped = pn.commutative && fits(q, n, true);
    if (!straight && !swapped) return false;
    // A pair that failed before: its failure under the same bindings of its
    // cone is remembered. Only failures are noted: a pair that matched is
    // taken with its match (or undone by a sibling's failure, then tried once
    // more before it is noted), so a million matches leave no entries.
    std::string key;
    const uint64_t pair = pairKey(q, n, false);
    if (failedOnce_.find(pair)) {
      key = signature(q, n);
      if (failed_.count(key)) return false;
    }
    uint64_t hits = hits_;
    size_t mark = trail_.size();
    bindNode(q, n);
    for (bool order : {false, true}) {
      if (!(order ? swapped : straight)) continue;
      size_t inner = trail_.size();
      bool ok = true;
      for (size_t i = 0; ok && i < pn.inputs.size(); ++i) ok = matchRef(pn.inputs[i], input(n, i, order));
      if (ok) return true;
      undo(inner);
    }
    undo(mark);
    failedOnce_[pair] = true;
    if (!key.empty() && hits == hits_) failed_.insert(std::move(key));
    return false;
  }

  // Pattern nodes the anchor does not reach (the other outputs of a
  // multi-output match, e.g. k and v beside q) are looked for forward: an
  // unbound pattern node reading a bound value is tried on each reader of
  // that value with its op type, with backtracking.
  bool matchRest() {
    for (size_t i = 0; i < c_.nodes.size(); ++i) {
      const CompiledNode& pn = c_.nodes[i];
      if (bound_[i] || pn.constant) continue;
      for (const Ref& r : pn.inputs) {
        Value* v = nullptr;
        if (r.kind == Ref::Formal) v = formal_[static_cast<size_t>(r.index)];
        if (r.kind == Ref::Output && bound_[static_cast<size_t>(r.index)])
          v = bound_[static_cast<size_t>(r.index)]->output(static_cast<size_t>(r.output));
        if (!v) continue;
        std::vector<Node*> candidates;
        for (const Use& u : v->uses())
          if (u.node->opType() == pn.op && std::find(candidates.begin(), candidates.end(), u.node) == candidates.end())
            candidates.push_back(u.node);
        for (Node* c : candidates) {
          size_t mark = trail_.size();
          if (matchNode(static_cast<int>(i), c) && matchRest()) return true;
          undo(mark);
        }
        return false;  // this node reads a bound value but no reader matches
      }
    }
    // Every node is bound, or the unbound ones read nothing bound (not connected: unsupported).
    for (size_t i = 0; i < c_.nodes.size(); ++i)
      if (!bound_[i] && !c_.nodes[i].constant) return false;
    return true;
  }

  // A pattern node, a graph node and a flag as one key of the memo tables: the
  // node's address in the low 48 bits (every user-space address on x86-64 and
  // AArch64 Linux), the flag above it, the pattern node's index (under
  // kMaxMatchNodes) in the top 15 bits.
  static uint64_t pairKey(int q, const Node* n, bool swapped) {
    static_assert(kMaxMatchNodes < (1 << 15));
    const auto address = reinterpret_cast<uintptr_t>(n);
    if (address >> 48) throw std::length_error("pattern matcher: a node address above 48 bits");
    return static_cast<uint64_t>(q) << 49 | uint64_t{swapped} << 48 | address;
  }

  const CompiledPattern& c_;
  const FlatPointerSet<Node>& taken_;
  uint64_t maxSteps_;
  std::string rule_;
  std::vector<Value*> formal_;
  std::vector<Node*> bound_;
  FlatPointerSet<Node> used_;
  std::vector<Undo> trail_;
  uint64_t steps_ = 0, hits_ = 0;
  Node* at_ = nullptr;
  FlatU64Map<bool> misfits_;  // pairs fits() said no to, by pairKey
  FlatU64Map<bool> fitsHere_;  // pairs fits() said yes to in this attempt
  FlatU64Map<bool> failedOnce_;  // (q, node) pairs whose match failed, by pairKey(q, node, false)
  std::unordered_set<std::string> failed_;
  std::unordered_map<int, std::pair<std::vector<int>, std::vector<int>>> cones_;
};

}  // namespace

PatternMatches Pattern::find(Graph& g, FlatPointerSet<Node>& taken, uint64_t maxSteps) const {
  const CompiledPattern& c = *compiled_;
  const CompiledNode& anchor = c.nodes[static_cast<size_t>(c.anchor)];
  Matcher matcher(c, taken, maxSteps, where_ + ": rule '" + match_.name() + "'");
  PatternMatches matches;
  for (const auto& np : g.nodes()) {
    Node* n = np.get();
    if (n->opType() != anchor.op || taken.contains(n) || !matcher.matchAt(n)) continue;
    PatternMatch b;
    b.values.resize(c.slots.size(), nullptr);
    b.nodes = matcher.nodes();
    for (size_t f = 0; f < c.formals.size(); ++f)
      if (Value* v = matcher.formals()[f]) b.values[static_cast<size_t>(c.formalSlots[f])] = v;
    for (size_t q = 0; q < c.nodes.size(); ++q)
      if (const Node* m = b.nodes[q])
        for (size_t k = 0; k < c.outputSlots[q].size(); ++k)
          b.values[static_cast<size_t>(c.outputSlots[q][k])] = m->output(k);
    if (!complete(b)) continue;
    for (const Node* m : b.nodes)
      if (m) taken.insert(m);
    matches.push_back(std::move(b));
  }
  return matches;
}

}  // namespace graphrw
