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

}  // namespace graphrw::ir
