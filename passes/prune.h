// prune: drop what nothing uses: initializers no node reads, local functions
// no call reaches, value_info entries for values nothing defines, and opset
// imports of domains no node uses (ai.onnx always stays).
#pragma once

#include <memory>

#include "analysis/pass.h"

namespace graphrw::passes {

struct PruneOptions {
  bool initializers = true;
  bool functions = true;
  bool valueInfo = true;
  bool opsetImports = true;
};

std::unique_ptr<Pass> createPrunePass(PruneOptions options);

}  // namespace graphrw::passes
