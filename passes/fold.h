// fold: constant folding. Nodes whose inputs are all constant (initializers,
// Constant nodes, and Shape / Size of tensors whose shape is static) are
// evaluated on the host into initializers, up to a size per result.
#pragma once

#include <cstdint>
#include <memory>

#include "analysis/pass.h"

namespace graphrw::passes {

struct FoldOptions {
  uint64_t maxBytes = 1 << 20;  // results (and initializer inputs) over this are left alone
  bool shapes = true;           // fold Shape / Size of tensors whose shape is static
};

std::unique_ptr<Pass> createFoldPass(FoldOptions options);

}  // namespace graphrw::passes
