// prune: drop what nothing uses: initializers no node reads, local functions
// no call reaches, value_info entries for values nothing defines, and opset
// imports of domains no node uses (ai.onnx always stays).
#pragma once

#include <memory>

#include "pass/pass.h"

namespace graphrw::passes {

inline constexpr const char* kPrunePass = "prune";

// What goes; the defaults are the pass's declared ones (prune.cpp).
struct PruneOptions {
  bool initializers = optionDefaultAs<bool>(kPrunePass, "initializers");
  bool functions = optionDefaultAs<bool>(kPrunePass, "functions");
  bool valueInfo = optionDefaultAs<bool>(kPrunePass, "value_info");
  bool opsetImports = optionDefaultAs<bool>(kPrunePass, "opset_imports");
};

std::unique_ptr<Pass> createPrunePass(PruneOptions options);

}  // namespace graphrw::passes
