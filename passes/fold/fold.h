// fold: constant folding. Nodes whose inputs are all constant (initializers,
// Constant nodes, and Shape / Size of tensors whose shape is static) are
// evaluated on the host into initializers, up to a size per result.
#pragma once

#include <cstdint>
#include <memory>

#include "pass/pass.h"

namespace graphrw::passes {

inline constexpr const char* kFoldPass = "fold";
// fold's max_bytes and legalize's fold_max_bytes default.
inline constexpr uint64_t kDefaultFoldMaxBytes = uint64_t{1} << 20;

// The defaults are the pass's declared ones (fold.cpp).
struct FoldOptions {
  uint64_t maxBytes =
      optionDefaultAs<uint64_t>(kFoldPass, "max_bytes");  // results (and initializer inputs) over this are left alone
  bool shapes = optionDefaultAs<bool>(kFoldPass, "shapes");  // fold Shape / Size of tensors whose shape is static
  // Initializers are parameters: ops reading them stay, results are Constant nodes.
  bool keepParameters = optionDefaultAs<bool>(kFoldPass, "keep_parameters");
  // Small initializers this run made that hold equal tensors become one.
  bool shareDuplicates = optionDefaultAs<bool>(kFoldPass, "share_duplicates");
};

std::unique_ptr<Pass> createFoldPass(FoldOptions options);

}  // namespace graphrw::passes
