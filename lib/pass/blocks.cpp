#include "pass/blocks.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "pass/pass.h"
#include "support/error.h"

namespace graphrw {

using namespace ir;

Node* ownerIn(const Graph& g, Node* n) {
  while (n && n->graph() != &g) {
    Graph* up = n->graph();
    n = up ? up->parentNode() : nullptr;
  }
  return n;
}

namespace {

// Whether `inner` is g or a graph nested inside g.
bool within(const Graph* inner, const Graph& g) {
  for (; inner; inner = inner->parent())
    if (inner == &g) return true;
  return false;
}

void collectReads(const Graph& g, Node* n, const std::unordered_set<const Node*>& members,
                  std::unordered_set<const Value*>& seen, std::vector<Value*>& activations,
                  std::vector<Value*>& weights) {
  auto consider = [&](Value* v) {
    if (!v) return;
    if (v->graph() == &g) {
      if (v->producer() && members.count(v->producer())) return;
    } else if (within(v->graph(), g)) {
      return;  // defined inside one of the block's subgraphs
    }
    if (!seen.insert(v).second) return;
    (v->isInitializer() ? weights : activations).push_back(v);
  };
  for (Value* v : n->inputs()) consider(v);
  n->forEachSubgraph([&](Graph& sub) {
    for (const auto& inner : sub.nodes()) collectReads(g, inner.get(), members, seen, activations, weights);
  });
}

}  // namespace

void requireMatches(const std::string& pass, const SelectorSet& select, const std::set<std::string>& hits,
                    bool allowNoMatch) {
  // A list of alternatives is one selector: it matches nothing only when no alternative does.
  for (const auto& sel : select.any)
    if (hits.count(sel.str())) return;
  if (!select.any.empty()) reportNoMatch(pass, "selector '" + select.str() + "' matched no node", allowNoMatch);
}

void fillBoundary(Graph& g, Block& b) {
  b.inputs.clear();
  b.outputs.clear();
  std::unordered_set<const Node*> members(b.nodes.begin(), b.nodes.end());
  std::unordered_set<const Value*> seen;
  std::vector<Value*> weights;
  for (Node* n : b.nodes) collectReads(g, n, members, seen, b.inputs, weights);
  b.inputs.insert(b.inputs.end(), weights.begin(), weights.end());
  for (Node* n : b.nodes)
    for (Value* v : n->outputs()) {
      if (!v) continue;
      bool outside = v->graphOutputCount() > 0;
      for (const Use& u : v->uses())
        if (!outside && !members.count(ownerIn(g, u.node))) outside = true;
      if (outside) b.outputs.push_back(v);
    }
}

std::vector<Block> findBlocks(Graph& g, const SelectorSet& select, std::set<std::string>* hits) {
  std::vector<Block> blocks;
  std::unordered_map<std::string, size_t> byScope;  // blocks keeps first-seen order
  uint64_t pos = 0;
  for (const auto& owned : g.nodes()) {
    Node* n = owned.get();
    n->scratch = pos++;
    for (const auto& sel : select.any) {
      if (!sel.matches(*n)) continue;
      if (hits) hits->insert(sel.str());
      if (auto prefix = sel.scopeOf(n->name())) {
        auto [it, fresh] = byScope.emplace(*prefix, blocks.size());
        if (fresh) blocks.push_back({*prefix, {}, {}, {}});
        blocks[it->second].nodes.push_back(n);
      } else {
        blocks.push_back({n->name().str(), {n}, {}, {}});
      }
      break;
    }
  }
  for (Block& b : blocks) fillBoundary(g, b);
  return blocks;
}

void checkConvex(const Graph& g, const std::vector<Block>& blocks, const std::string& what) {
  // A path that leaves a block and re-enters it runs through nodes placed
  // between the block's first and last node, so each search stays in that window.
  // A node's position is its scratch: a hash map of a million nodes' positions took about 40 MB.
  if (g.nodeCount() >= UINT32_MAX) badInput(what + ": more than 2^32-1 nodes in one graph");
  uint32_t i = 0;
  for (const auto& n : g.nodes()) n->scratch = i++;
  auto position = [](const Node* n) -> size_t { return n->scratch; };
  for (const Block& block : blocks) {
    std::unordered_set<const Node*> members(block.nodes.begin(), block.nodes.end());
    size_t first = SIZE_MAX, last = 0;
    for (Node* n : block.nodes) {
      first = std::min(first, position(n));
      last = std::max(last, position(n));
    }
    std::vector<std::pair<Node*, Node*>> work;  // (outside node, the block node the path left from)
    std::unordered_set<const Node*> visited;
    auto push = [&](Value* v, Node* from) {
      for (const Use& u : v->uses()) {
        Node* owner = ownerIn(g, u.node);
        if (!owner || members.count(owner) || visited.count(owner)) continue;
        size_t p = position(owner);
        if (p > last || p < first) continue;
        visited.insert(owner);
        work.push_back({owner, from});
      }
    };
    for (Node* n : block.nodes)
      for (Value* v : n->outputs())
        if (v) push(v, n);
    while (!work.empty()) {
      auto [x, from] = work.back();
      work.pop_back();
      for (Value* v : x->outputs()) {
        if (!v) continue;
        for (const Use& u : v->uses()) {
          Node* owner = ownerIn(g, u.node);
          if (owner && members.count(owner))
            badInput(what + ": block '" + block.key + "' is not convex: a path leaves it at node '" + from->name() +
                     "', runs through node '" + x->name() + "' outside it and comes back at node '" + owner->name() +
                     "'");
        }
        push(v, from);
      }
    }
  }
}

}  // namespace graphrw
