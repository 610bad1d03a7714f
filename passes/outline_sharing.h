// outline's rules for when blocks may share one callee under PopART, which
// builds a callee once, at its first Call: what input types must agree, the
// type a shared body declares, and the PyTorch export habits (weights passed
// through Identity, the attention mask computed in the first layer only,
// checkpoints on a block's outputs) that would otherwise keep equal layers
// apart.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/blocks.h"
#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw::passes::outline_sharing {

// What must match for two blocks' inputs to share a body: element type and rank.
std::string typeKey(const ir::Value* v);
// The most specific type true of all: dimensions that agree are kept, the others left unknown.
std::optional<onnx::TypeProto> commonType(const std::vector<const ir::Value*>& values);

// Blocks are the same computation when their ops, attributes, wiring and
// input types are (and constant inputs that shape an op inside, by value).
std::string signature(const Block& b);
// A callee's name from its blocks' keys, the parts in which they differ left
// out ("/encoder/layer.0", "/encoder/layer.1" -> "encoder_layer"), unique
// among `taken` (which it joins).
std::string calleeName(const std::vector<std::string>& keys, std::set<std::string>& taken);
// Value names read or written by a node and by nodes in its subgraphs (free
// names only: inner names are not in the map) renamed as `rename` says.
void renameRefs(onnx::NodeProto& p, const std::unordered_map<std::string, std::string>& rename);

// Identity nodes on initializers (PyTorch's way of passing layer 0's weights to
// later layers) are removed, their readers reading the initializer. Returns how many.
size_t forwardWeightIdentities(ir::Rewriter& rw, ir::Graph& g);
// Nodes of a block computing only from graph inputs and constants that another
// block reads too leave the block (the attention mask). Returns how many.
size_t hoistShared(ir::Graph& g, std::vector<Block>& blocks);
// Checkpoints on a block's outputs leave the block (PopART reads recompute
// types only in the main graph). Returns how many.
size_t detachCheckpoints(ir::Graph& g, Block& b);

}  // namespace graphrw::passes::outline_sharing
