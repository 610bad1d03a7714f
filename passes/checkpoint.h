// checkpoint: PopART recomputation checkpoints after chosen blocks (an
// Identity carrying __recompute_output_in_backward_pass = 1, exactly as
// PopART's Builder::checkpointOutput writes it), or Recompute marks (= 2).
#pragma once

#include <memory>

#include "analysis/pass.h"
#include "analysis/selector.h"

namespace graphrw::passes {

struct CheckpointOptions {
  enum class Mode { Checkpoint, Recompute };
  SelectorSet after;         // the blocks (nodes, calls, scopes)
  size_t every = 1;          // keep the K-th, 2K-th, ... block of each graph
  Mode mode = Mode::Checkpoint;
  bool allowNoMatch = false; // a selector matching nothing is a warning, not an error
};

std::unique_ptr<Pass> createCheckpointPass(CheckpointOptions options);
CheckpointOptions checkpointOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer);
CheckpointOptions::Mode parseCheckpointMode(const std::string& text);

}  // namespace graphrw::passes
