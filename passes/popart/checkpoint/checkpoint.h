// checkpoint: PopART recomputation checkpoints after chosen blocks (an
// Identity carrying __recompute_output_in_backward_pass = 1, exactly as
// PopART's Builder::checkpointOutput writes it), or Recompute marks (= 2).
#pragma once

#include <memory>

#include "pass/pass.h"
#include "pass/selector.h"

namespace graphrw::passes {

inline constexpr const char* kCheckpointPass = "checkpoint";

struct CheckpointOptions {
  enum class Mode { Checkpoint, Recompute };
  SelectorSet after;  // the blocks (nodes, calls, scopes)
  // The defaults are the pass's declared ones (checkpoint.cpp).
  size_t every = optionDefaultAs<size_t>(kCheckpointPass, "every");  // keep the K-th, 2K-th, ... block of each graph
  Mode mode = parseCheckpointMode(optionDefaultAs<std::string>(kCheckpointPass, "mode"));
  bool allowNoMatch = optionDefaultAs<bool>(kCheckpointPass, "allow_no_match");

  static Mode parseCheckpointMode(const std::string& text);
};

std::unique_ptr<Pass> createCheckpointPass(CheckpointOptions options);
CheckpointOptions checkpointOptionsFromJson(const nlohmann::json& j, const RuleContext& rules,
                                            const std::string& pointer);

}  // namespace graphrw::passes
