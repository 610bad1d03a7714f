// PopART's rules for placed and pipelined models and for the operands it reads
// as data at import, as `validate --target popart` findings (classes
// weight-ipus, pipeline-recompute, shape-operand, placement across graphs,
// groupnorm-params). Part of checkImport (popart_check.h); each rule cites
// the PopART source line it comes from in popart_placed.cpp.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "target/popart/check.h"

namespace graphrw::popart {

// Appends the findings of these rules to `out`, in graph order.
void checkPlacedModel(const ir::Model& model, std::vector<Finding>& out);

}  // namespace graphrw::popart
