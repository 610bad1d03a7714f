// Constant folding of weight layout changes: the ops a replacement template
// applies to initializers (Transpose, Reshape, Concat, Split, Slice, Squeeze,
// Unsqueeze, Cast, Identity, and Add/Sub/Mul/Div/Neg with numpy broadcasting)
// evaluated on the host, so the written model carries the transformed weights.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/host_tensor.h"
#include "ir/ir.h"

namespace graphrw {

// Whether graphrw can fold this op at all (its type and attributes are checked by evaluate).
bool isFoldable(const ir::Node& node);
// Evaluates `node` on constant inputs (nullptr: missing optional input).
// Returns nothing, with `why` set, when an input type or attribute is not
// supported, or when a result would hold more than `maxBytes`.
std::optional<std::vector<HostTensor>> evaluate(const ir::Node& node, const std::vector<const HostTensor*>& inputs,
                                                std::string& why, uint64_t maxBytes = UINT64_MAX);

}  // namespace graphrw
