// libFuzzer: rule-file text -> parseRules (schema validation, every pass's
// options). A graphrw::Error is a clean refusal; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/graphcore_ops.h"
#include "driver/rules.h"
#include "support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool registered = (graphrw::registerGraphcoreOps(), true);
  (void)registered;
  try {
    graphrw::parseRules(std::string(reinterpret_cast<const char*>(data), size), "fuzz.rules.json");
  } catch (const graphrw::Error&) {
  }
  return 0;
}
