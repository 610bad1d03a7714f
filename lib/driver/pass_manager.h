// Runs passes in order; every subcommand builds a pipeline through here, so a
// command and the equivalent rule file give identical output.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "pass/pass.h"

namespace graphrw {

struct PipelineOptions {
  bool verifyEach = false;
  std::optional<size_t> stopAfter;  // run only the first N passes
  std::string printIrAfter;  // a pass name, its index, or "all": textual ONNX to stderr
};

// The model as ONNX's textual syntax (onnx/defs/printer.h): the main graph,
// then each function. Weights are shown by type and shape only.
std::string printModel(const ir::Model& model);

class PassManager {
 public:
  explicit PassManager(PipelineOptions options = {}) : options_(options) {}
  // Passes are immutable: one pass object may be in many pipelines at once (batch runs).
  void add(std::shared_ptr<const Pass> pass) { passes_.push_back(std::move(pass)); }
  // Runs the pipeline and returns the report: per pass, what it matched, what
  // it changed and how long it took. Throws Error on a failing pass or a
  // verifier finding (ExitCode::Findings) naming the pass.
  nlohmann::json run(ir::Model& model);

 private:
  PipelineOptions options_;
  std::vector<std::shared_ptr<const Pass>> passes_;
};

}  // namespace graphrw
