// strip-doc: remove doc strings (exporters' notes, stack traces) from nodes,
// graphs, local functions and the model. Names, shapes and maths are untouched.
#pragma once

#include <memory>

#include "pass/pass.h"

namespace graphrw::passes {

inline constexpr const char* kStripDocPass = "strip-doc";

// What loses its doc string; the defaults are the pass's declared ones (strip_doc.cpp).
struct StripDocOptions {
  bool nodes = optionDefaultAs<bool>(kStripDocPass, "nodes");
  bool graphs = optionDefaultAs<bool>(kStripDocPass, "graphs");
  bool functions = optionDefaultAs<bool>(kStripDocPass, "functions");
  bool model = optionDefaultAs<bool>(kStripDocPass, "model");
};

std::unique_ptr<Pass> createStripDocPass(StripDocOptions options);

}  // namespace graphrw::passes
