// legalize: one step from an export to a model a target imports. For PopART:
// inline local functions, fix input shapes, fold shape computations, replace
// ops PopART lacks (schemas/targets/popart.json, templates as `replace` takes
// them), convert to ai.onnx opset 11 and IR version 6, fold again, and check
// everything `validate --target popart` checks: nothing is written while a
// finding remains.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/pass.h"

namespace graphrw::passes {

struct LegalizeOptions {
  std::string target = "popart";
  std::map<std::string, std::vector<int64_t>> inputs;  // input name -> its whole shape
  std::map<std::string, int64_t> dims;                 // symbolic dimension -> value
  uint64_t foldMaxBytes = 1 << 20;
  std::string gelu = "erf";  // the erf-GELU chain as ai.graphcore::GeluErf (exact), or "tanh": ai.graphcore::Gelu
};

std::unique_ptr<Pass> createLegalizePass(LegalizeOptions options);

}  // namespace graphrw::passes
