// What graphrw's libFuzzer targets share: the passes run with verify-each and
// the result serialized, and the line between a clean refusal and a bug.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "driver/pass_manager.h"
#include "io/writer.h"
#include "support/error.h"

namespace graphrw::fuzz {

// Runs `passes` on `model` with the IR verifier after each, then serializes it.
inline void runPasses(ir::Model& model, const std::vector<std::shared_ptr<const Pass>>& passes) {
  PassManager pm({/*verifyEach=*/true, std::nullopt, ""});
  for (const auto& p : passes) pm.add(p);
  pm.run(model);
  (void)serialize(model);
}

// A graphrw::Error is a clean refusal, except a verifier finding after a pass
// (a pass broke the IR, or changed it without counting) and an internal error.
inline void abortOnBug(const Error& e) {
  if (e.code() == ExitCode::Findings || e.code() == ExitCode::Internal) {
    std::fprintf(stderr, "graphrw bug: %s\n", e.what());
    std::abort();
  }
}

}  // namespace graphrw::fuzz
