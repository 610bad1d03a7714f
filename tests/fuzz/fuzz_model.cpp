// libFuzzer: bytes -> load -> verify -> expand (with --verify-each) -> write
// to memory. A graphrw::Error is a clean refusal, except a verifier finding
// after a pass (a pass broke the IR, or changed it without counting) and an
// internal error: those, a crash, a sanitizer report or another exception are
// bugs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "driver/pass_manager.h"
#include "fuzz_common.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/verifier.h"
#include "passes/expand/expand.h"
#include "support/buffer.h"
#include "support/error.h"
#include "target/popart/graphcore_ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = (graphrw::registerGraphcoreOps(), true);
  (void)registered;
  try {
    auto bytes = graphrw::Buffer::fromString(std::string(reinterpret_cast<const char*>(data), size));
    // External data resolves against a folder that does not exist: never a file of this machine.
    auto model = graphrw::loadModel(bytes, "/nonexistent-graphrw-fuzz", "fuzz");
    // A model the loader accepts but the verifier does not is an input the
    // passes are not given (the loader's own checks are fuzzed up to here).
    if (!graphrw::verify(*model).empty()) return 0;
    graphrw::passes::ExpandOptions options;
    options.maxNodes = 100'000;
    graphrw::fuzz::runPasses(*model, {graphrw::passes::createExpandPass(options)});
  } catch (const graphrw::Error& e) {
    graphrw::fuzz::abortOnBug(e);
  }
  return 0;
}
