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
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"
#include "ir/rewriter.h"
#include "pass/blocks.h"

namespace graphrw::passes::outline_sharing {

// What must match for two blocks' inputs to share a body: the element type
// (ranks and dimensions are compared where known, by ShapeProfile).
std::string typeKey(const ir::Value* v);

// What is known of the shapes a block's read slots receive: per slot its
// dimensions (-1: unknown or symbolic), nullopt where the rank is unknown.
using ShapeProfile = std::vector<std::optional<std::vector<int64_t>>>;
ShapeProfile shapeProfile(const std::vector<ir::Value*>& slots);
// Whether blocks with these profiles may share a callee: where both know a
// rank or a dimension, they agree (PopART builds a callee for the shapes of
// its first call only).
bool compatible(const ShapeProfile& a, const ShapeProfile& b);
// `into` learns what `from` knows (they are compatible).
void merge(ShapeProfile& into, const ShapeProfile& from);
// The most specific type true of all: dimensions that agree are kept, the others left unknown.
std::optional<onnx::TypeProto> commonType(const std::vector<const ir::Value*>& values);

// Per block node, per input: the slot it reads, or -1. Flat: a vector per
// node took 56 bytes a node (a million-node outline held 56 MB of them).
class DirectSlots {
 public:
  void addNode(size_t inputs) {
    if (start_.empty()) start_.push_back(0);
    slots_.resize(slots_.size() + inputs, -1);
    start_.push_back(static_cast<uint32_t>(slots_.size()));
  }
  // The last node added: its input j reads `slot`.
  void setLast(size_t j, int32_t slot) { slots_[start_[start_.size() - 2] + j] = slot; }
  std::span<const int32_t> operator[](size_t k) const { return {slots_.data() + start_[k], start_[k + 1] - start_[k]}; }
  void reserve(size_t nodes, size_t inputs) {
    start_.reserve(nodes + 1);
    slots_.reserve(inputs);
  }

 private:
  std::vector<int32_t> slots_;
  std::vector<uint32_t> start_;  // node k's slots are [start_[k], start_[k + 1])
};

// What a block reads from outside it, one slot per use: each input of each
// node (in block order) that is not produced inside, then, per node, each
// value its subgraphs read from outside (one slot per value). The same value
// may fill several slots: PyTorch passes one merged parameter where another
// layer passes two equal ones, and the layers still compute the same thing.
struct Reads {
  std::vector<ir::Value*> slots;
  DirectSlots direct;
  std::unordered_map<const ir::Value*, size_t> implicit;  // value read inside subgraphs -> its slot
};
Reads readsOf(const ir::Graph& g, const Block& b);

// Blocks are the same computation when their ops, attributes, wiring and the
// types of what fills each read slot are (and constant inputs that shape an op
// inside, by value), whichever slots read the same value.
std::string signature(const Block& b, const Reads& reads);

// The parameters of a callee shared by blocks of one signature: two slots are
// one parameter when every block reads one value in both. Returns each slot's
// parameter; parameters are numbered in order of their first slot.
std::vector<size_t> parameterOf(const std::vector<const Reads*>& blocks);
// A callee's name from its blocks' keys, the parts in which they differ left
// out ("/encoder/layer.0", "/encoder/layer.1" -> "encoder_layer"), unique
// among `taken` (which it joins).
std::string calleeName(const std::vector<std::string>& keys, std::set<std::string>& taken);
// Value names read or written by a node and by nodes in its subgraphs (free
// names only: inner names are not in the map) renamed as `rename` says.
void renameRefs(onnx::NodeProto& p, const std::unordered_map<std::string, std::string>& rename);
// Nodes of a block computing only from graph inputs and constants that another
// block reads too leave the block (the attention mask). Returns how many.
size_t hoistShared(ir::Graph& g, std::vector<Block>& blocks);
// Checkpoints on a block's outputs leave the block (PopART reads recompute
// types only in the main graph). Returns how many.
size_t detachCheckpoints(ir::Graph& g, Block& b);

}  // namespace graphrw::passes::outline_sharing
