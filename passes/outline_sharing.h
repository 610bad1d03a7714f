// outline's rules for when blocks may share one callee under PopART, which
// builds a callee once, at its first Call: what input types must agree, the
// type a shared body declares, and the PyTorch export habits (weights passed
// through Identity, the attention mask computed in the first layer only,
// checkpoints on a block's outputs) that would otherwise keep equal layers
// apart.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "blocks.h"
#include "ir.h"
#include "rewriter.h"

namespace graphrw::passes::outline_sharing {

// What must match for two blocks' inputs to share a body: element type and rank.
std::string typeKey(const ir::Value* v);
// The value's shape when every dimension is a known number.
std::optional<std::vector<int64_t>> staticShape(const ir::Value* v);
// The most specific type true of all: dimensions that agree are kept, the others left unknown.
std::optional<onnx::TypeProto> commonType(const std::vector<const ir::Value*>& values);

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
