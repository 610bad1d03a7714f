// libFuzzer: rule-file text -> parseRules (schema validation, every pass's
// options, templates and patterns checked standalone) -> the passes run with
// verify-each on a small model that has what the bundled rule files look for
// (an erf-GELU chain, a LayerNorm decomposition, MatMul/Add, Dropout). A
// graphrw::Error is a clean refusal, except a verifier finding after a pass or
// an internal error: those, a crash or another exception are bugs.
#include <onnx/defs/parser.h>

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "fuzz_common.h"
#include "io/loader.h"
#include "io/writer.h"
#include "support/error.h"
#include "target/popart/graphcore_ops.h"

namespace {

const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2, 4] x) => (float[2, 4] y) <float[4, 4] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}, float[4] b = {0.1, 0.2,
    0.3, 0.4}> {
  mm = MatMul (x, w)
  h = Add (mm, b)
  s = Constant <value = float {1.4142135}> ()
  d = Div (h, s)
  e = Erf (d)
  one = Constant <value = float {1.0}> ()
  a = Add (e, one)
  m = Mul (h, a)
  half = Constant <value = float {0.5}> ()
  g1 = Mul (m, half)
  mean = ReduceMean <axes = [-1]> (g1)
  c = Sub (g1, mean)
  two = Constant <value = float {2.0}> ()
  p = Pow (c, two)
  var = ReduceMean <axes = [-1]> (p)
  eps = Constant <value = float {1e-5}> ()
  ve = Add (var, eps)
  sd = Sqrt (ve)
  n = Div (c, sd)
  y = Relu (n)
}
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Warnings (a rule that matched nothing) would flood the log: errors only.
  static const bool registered = (graphrw::registerGraphcoreOps(), spdlog::set_level(spdlog::level::err), true);
  static const onnx::ModelProto model = [] {
    onnx::ModelProto m;
    if (!onnx::OnnxParser::Parse(m, kModel).IsOK()) std::abort();
    return m;
  }();
  (void)registered;
  try {
    auto rules = graphrw::parseRules(std::string(reinterpret_cast<const char*>(data), size), "fuzz.rules.json");
    auto m = graphrw::loadModel(model, "/nonexistent-graphrw-fuzz");
    graphrw::fuzz::runPasses(*m, rules.passes);
  } catch (const graphrw::Error& e) {
    graphrw::fuzz::abortOnBug(e);
  }
  return 0;
}
