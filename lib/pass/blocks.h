// Blocks: what checkpoint and outline work on. A selector picks nodes of one
// graph; nodes matched through a `scope` key group by the prefix they share
// (each distinct prefix is one block), every other matched node (an op, or a
// call of a local function) is a block by itself.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "pass/selector.h"

namespace graphrw {

struct Block {
  std::string key;  // the scope prefix, or the node's name
  std::vector<ir::Node*> nodes;  // in graph order
  // Values the block's nodes (or nodes in their subgraphs) read but do not
  // produce: activations first, then initializers, each in order of first use.
  std::vector<ir::Value*> inputs;
  // Values the block produces that are read outside it or are graph outputs,
  // in the order their producers appear.
  std::vector<ir::Value*> outputs;
};

// The blocks of `g` (not of its subgraphs) in graph order (by first node).
// `hits` receives the str() of each selector that matched something.
std::vector<Block> findBlocks(ir::Graph& g, const SelectorSet& select, std::set<std::string>* hits = nullptr);

// A selector of `select` that findBlocks never hit is an error (Usage) naming
// the pass, or a warning when `allowNoMatch`.
void requireMatches(const std::string& pass, const SelectorSet& select, const std::set<std::string>& hits,
                    bool allowNoMatch);

// Computes b.inputs and b.outputs from b.nodes (nodes of g, in graph order).
void fillBoundary(ir::Graph& g, Block& b);

// The node of `g` that holds `n`: n itself, or the node whose subgraph (at any
// depth) holds it; nullptr if n is not inside g.
ir::Node* ownerIn(const ir::Graph& g, ir::Node* n);

// Throws Error(BadInput) when a path leaves a block and comes back into it,
// naming the block, the node it leaves from and the node it re-enters at.
void checkConvex(const ir::Graph& g, const std::vector<Block>& blocks, const std::string& what);

}  // namespace graphrw
