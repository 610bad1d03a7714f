// place: pipeline stages and IPUs by layer names (the seed's
// `pipeline_stages` and `pipeline_device_mapping`). Stage i holds the nodes
// its selectors match; every other node follows its data (the latest stage
// among its producers; constants and shape computations take their first
// consumer's); the result is all-or-none, one IPU per stage, stages never
// decreasing along the data. `__pipeline_stage` and `__ipu_number` (INT) go on
// every node of the main graph and every node inside its subgraphs (a Call's
// callee runs where its Call runs).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "pass/pass.h"
#include "pass/selector.h"
#include "passes/popart/place/place_auto.h"

namespace graphrw::passes {

inline constexpr const char* kPlacePass = "place";

// The defaults are the pass's declared ones (place.cpp).
struct PlaceOptions {
  std::vector<SelectorSet> stages;
  std::vector<int64_t> ipus;  // per stage (default: stage i on IPU i); without stages: one IPU for all
  bool pipeline = optionDefaultAs<bool>(kPlacePass, "pipeline");  // false: only __ipu_number (sharding)
  bool allowNoMatch = optionDefaultAs<bool>(kPlacePass, "allow_no_match");
  // Parameters PyTorch merged for equal values (an Identity of an initializer,
  // named after the other parameter) each get their own initializer first.
  bool untie = optionDefaultAs<bool>(kPlacePass, "untie");
  // --auto N: the stages from the cost model (stages above become its pins).
  std::optional<AutoPlaceOptions> autoPlace;
};

std::unique_ptr<Pass> createPlacePass(PlaceOptions options);

}  // namespace graphrw::passes
