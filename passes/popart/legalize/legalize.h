// legalize: one step from an export to a model a target imports. For PopART:
// inline local functions, fix input shapes, fold shape computations, replace
// ops PopART lacks (schemas/targets/popart.json, templates as `replace` takes
// them), convert to ai.onnx opset 11 and IR version 6, fold again, and check
// everything `validate --target popart` checks: nothing is written while a
// finding remains. Training mode (the default) keeps every initializer as the
// export wrote it (legalize_training.h); inference mode folds weight transforms.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pass/pass.h"
#include "pass/selector.h"

namespace graphrw::passes {

inline constexpr const char* kLegalizePass = "legalize";

// The defaults are the pass's declared ones (legalize.cpp).
struct LegalizeOptions {
  std::string target = optionDefaultAs<std::string>(kLegalizePass, "target");
  std::map<std::string, std::vector<int64_t>> inputs;  // input name -> its whole shape
  std::map<std::string, int64_t> dims;  // symbolic dimension -> value
  uint64_t foldMaxBytes = optionDefaultAs<uint64_t>(kLegalizePass, "fold_max_bytes");
  // The erf-GELU chain as ai.graphcore::GeluErf (erf, exact), or ai.graphcore::Gelu (tanh).
  std::string gelu = optionDefaultAs<std::string>(kLegalizePass, "gelu");
  // training: every initializer kept as it is (a parameter); inference: weight transforms folded.
  std::string mode = optionDefaultAs<std::string>(kLegalizePass, "mode");
  // The PopART release X.Y to write for ("": the newest graphrw knows).
  std::string popartVersion;
  // Training: the initializers the framework trains (--parameters FILE); the
  // other float ones become Constants. Unset: every float initializer is one.
  std::optional<std::set<std::string>> parameters;
  std::string parametersFile;  // as given, for messages
  // Training: parameters made Constants (frozen layers); selectors over initializer names.
  SelectorSet frozen;
};

std::unique_ptr<Pass> createLegalizePass(LegalizeOptions options);

}  // namespace graphrw::passes
