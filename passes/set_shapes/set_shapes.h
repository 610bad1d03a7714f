// set-shapes: fix graph-input dimensions, by input name or by symbolic
// dimension name, then propagate with ONNX's per-op shape inference into
// value_info and the graph outputs (IPUs, and most ahead-of-time compilers,
// need static shapes).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pass/pass.h"

namespace graphrw::passes {

inline constexpr const char* kSetShapesPass = "set-shapes";

struct SetShapesOptions {
  std::map<std::string, std::vector<int64_t>> inputs;  // input name -> its whole shape
  std::map<std::string, int64_t> dims;  // symbolic dimension name -> value
};

std::unique_ptr<Pass> createSetShapesPass(SetShapesOptions options);
// --input NAME=D,D,... values (repeatable) -> {"NAME": [D, D, ...]}; Error(Usage) on a malformed one.
nlohmann::json inputShapesFromFlags(const std::vector<std::string>& values);

}  // namespace graphrw::passes
