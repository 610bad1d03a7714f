// The pass interface: a name and a run over the model. Every edit goes
// through the context's Rewriter, so what changed is counted, not claimed.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "ir.h"
#include "rewriter.h"

namespace graphrw {

struct PassContext {
  ir::Rewriter& rewriter;
  nlohmann::json details = nlohmann::json::object();  // pass-specific report entries
  size_t matched = 0;                                  // nodes or blocks the pass's selectors matched
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Throws graphrw::Error naming the node and rule on failure.
  virtual void run(ir::Model& model, PassContext& context) = 0;
};

}  // namespace graphrw
