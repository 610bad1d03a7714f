// A digest of everything the writer would write of a model: structure, names,
// attributes, doc strings, declared types and the bytes of every payload. Type
// annotations the IR keeps for analyses (Rewriter::setType) are not written and
// not part of it. --verify-each compares it before and after each pass with the
// edits the Rewriter counted.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace graphrw::ir {

uint64_t fingerprint(const Model& model);

// A digest of one node's own parts: name, op, domain, overload, its inputs and
// outputs by identity (a value renamed is the value's edit, not its readers'),
// attributes with their tensors, subgraphs by identity (their nodes have their
// own), the residual. A change here is an edit the Rewriter must count on the node.
uint64_t nodeFingerprint(const Node& n);

// Digests of the model's parts outside nodes, one per kind of edit the
// Rewriter counts (ChangeCounts), so that --verify-each can tell which kind
// changed: a part that changed with no edit of its kinds counted is an edit
// made behind the Rewriter's back, whatever else was counted. Parts of the
// main graph: a subgraph's, or a function body's, belong to its node or function.
struct PartFingerprints {
  uint64_t irVersion = 0;
  uint64_t opsetImports = 0;  // the model's and every function's
  uint64_t initializers = 0;  // dense and sparse: names and bytes
  uint64_t graphOutputs = 0;  // the main graph's outputs: names and declared types
  uint64_t graphInputs = 0;  // the main graph's inputs: names and declared types
  uint64_t valueInfo = 0;
  uint64_t functions = 0;  // which functions the model holds
  uint64_t docStrings = 0;  // the model's, the main graph's and every function's own
  bool operator==(const PartFingerprints&) const = default;
};
PartFingerprints partFingerprints(const Model& model);

}  // namespace graphrw::ir
