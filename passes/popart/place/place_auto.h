// `place --auto N`: contiguous pipeline stages along the layers, chosen with
// the stage cost model (target/popart/stage_cost.h) so that the slowest stage is
// as fast as it can be while every IPU fits its memory (docs/popart.md,
// "Automatic stages").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "pass/selector.h"
#include "target/popart/stage_cost.h"

namespace graphrw::passes {

enum class Balance { Compute, Memory, Both };

struct AutoPlaceOptions {
  size_t stages = 0;
  std::vector<int64_t> ipus;  // per stage; empty: stage i on IPU i
  uint64_t ipuMemory = 0;
  stage_cost::Optimizer optimizer = stage_cost::Optimizer::None;
  Balance balance = Balance::Compute;
  std::optional<int64_t> batch;  // stage_cost::Options::batch
  stage_cost::Calibration calibration;
  // Pins: the nodes each selector set matches go into its stage.
  std::vector<std::pair<size_t, SelectorSet>> pins;
  bool allowNoMatch = false;
};

struct AutoPlacement {
  std::vector<size_t> stageOf;  // per main-graph node, in graph order
  nlohmann::json report;  // per stage: layers, costs; the bottleneck
};

// One --stage or --pin selector text ("scope=/a/|op=Gemm": alternatives).
nlohmann::json selectorsFromFlag(const std::string& text);
// --pin STAGE=SEL... as the rule file's [{"stage": N, "select": SELECTORS}].
nlohmann::json pinsFromFlags(const std::vector<std::string>& values);
// The rule entry's auto, pin, ipu_memory, optimizer, balance, batch and costs
// (a calibration, or a file of one read from `baseDir`); `stages` (--stage)
// pin their stages too. Throws Error(Usage) naming the key.
AutoPlaceOptions autoPlaceOptions(const nlohmann::json& entry, const std::vector<SelectorSet>& stages,
                                  const std::vector<int64_t>& ipus, bool allowNoMatch,
                                  const std::function<std::string(const std::string&)>& at, const std::string& pointer,
                                  const std::filesystem::path& baseDir);
// A "costs" value: a calibration object, or the name of a JSON file holding one.
stage_cost::Calibration calibrationFrom(const nlohmann::json& costs, const std::string& what,
                                        const std::filesystem::path& baseDir);

// Throws Error(Usage) naming what cannot be done: fewer layers than stages,
// pins that contiguous stages cannot honour, and when no placement fits,
// how much each IPU misses in the placement that needs the least memory.
AutoPlacement autoPlace(ir::Model& model, const AutoPlaceOptions& options);

}  // namespace graphrw::passes
