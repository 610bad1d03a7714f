// Edits on weights that several passes need: folding computations on
// constants into new initializers (what replace does after a template that
// transposes or concatenates weights), constant inputs, and removing
// initializers nothing reads any more. Every edit goes through the Rewriter.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fold/fold.h"
#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw {

class WeightFolder {
 public:
  // Results larger than this are spilled to a temporary file (Buffer::spill)
  // rather than held in memory, and are not cached.
  static constexpr size_t kSpillBytes = 64 * 1024;

  explicit WeightFolder(ir::Rewriter& rw) : rw_(rw) {}

  // The constant value of `v`: an initializer or a Constant node's output; nullptr otherwise.
  const HostTensor* constantValue(ir::Value* v);
  // A constant input named after `name`: an initializer where the graph can
  // hold one (not inside a function body, parameters not kept), else a
  // Constant node before `before`.
  ir::Value* constant(ir::Graph& g, ir::Node* before, const HostTensor& t, const std::string& name);

  // Folds each of `candidates`, in order, that isFoldable() and reads only
  // constants, into initializers of its graph (never in function bodies); the
  // same computation (op, attributes, inputs, graph) is folded once. Folded
  // nodes, and the Constant nodes among `candidates` that only they read, are
  // erased. Initializers the folded nodes read become pruning candidates.
  void fold(const std::vector<ir::Node*>& candidates);

  // Parameters kept (a training session makes every initializer a trained
  // Variable): fold() leaves a node that reads an initializer alone, and
  // constant() makes Constant nodes, never initializers.
  void setKeepParameters(bool keep) { keepParameters_ = keep; }
  bool keepParameters() const { return keepParameters_; }
  // Results (and initializer inputs) over this many bytes are not folded.
  void setMaxBytes(uint64_t bytes) { maxBytes_ = bytes; }
  size_t folded() const { return folded_; }
  // Nodes left alone because a result or an input was over the size limit.
  size_t tooLarge() const { return tooLarge_; }
  // Folded nodes per op type.
  const std::map<std::string, size_t>& foldedPerOp() const { return perOp_; }
  size_t initializersCreated() const { return created_; }
  // Initializers that edits may have left unread: for pruneUnusedInitializers().
  std::set<ir::Value*>& pruneCandidates() { return dangling_; }

 private:
  std::string foldKey(const ir::Node& n) const;
  std::optional<ir::Value*> streamConcat(ir::Node& n);
  bool evaluateInto(ir::Node& n, std::vector<ir::Value*>& results);

  ir::Rewriter& rw_;
  size_t folded_ = 0, created_ = 0, tooLarge_ = 0;
  uint64_t maxBytes_ = UINT64_MAX;
  bool keepParameters_ = false;
  std::map<std::string, size_t> perOp_;
  std::unordered_map<const ir::Value*, HostTensor> hostCache_;
  std::vector<const ir::Value*> large_;  // cached values over kSpillBytes, dropped per folded node
  std::map<std::string, std::vector<ir::Value*>> memo_;
  std::set<ir::Value*> dangling_;
};

// Removes those of `candidates` that are initializers nothing reads (no use,
// not a graph input or output); returns how many.
size_t pruneUnusedInitializers(ir::Rewriter& rw, const std::set<ir::Value*>& candidates);

// PyTorch's exporter feeds later layers the parameters equal to layer 0's
// through Identity nodes on layer 0's initializers (the layers then differ in
// their inputs and would not share an outlined body). Such an Identity is an
// alias: its readers read the initializer instead and it goes. Identities on
// graph inputs, producing graph outputs or carrying `__` attributes (PopART
// checkpoints) stay. Returns how many went.
size_t forwardWeightIdentities(ir::Rewriter& rw, ir::Graph& g);

}  // namespace graphrw
