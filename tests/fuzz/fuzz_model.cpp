// libFuzzer: bytes -> load -> verify -> expand -> write to memory. A
// graphrw::Error is a clean refusal; anything else (a crash, a sanitizer
// report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "buffer.h"
#include "error.h"
#include "expand.h"
#include "graphcore_ops.h"
#include "loader.h"
#include "pass_manager.h"
#include "verifier.h"
#include "writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = (graphrw::registerGraphcoreOps(), true);
  (void)registered;
  try {
    auto bytes = graphrw::Buffer::fromString(std::string(reinterpret_cast<const char*>(data), size));
    // External data resolves against a folder that does not exist: never a file of this machine.
    auto model = graphrw::loadModel(bytes, "/nonexistent-graphrw-fuzz", "fuzz");
    (void)graphrw::verify(*model);
    graphrw::passes::ExpandOptions options;
    options.maxNodes = 100'000;
    graphrw::PassManager pm;
    pm.add(graphrw::passes::createExpandPass(options));
    pm.run(*model);
    (void)graphrw::serialize(*model);
  } catch (const graphrw::Error&) {
  }
  return 0;
}
