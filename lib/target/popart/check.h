// What PopART's import refuses, checked on graphrw's IR without PopART: the
// rules in docs/popart-attributes.md, the op factory table generated from
// PopART's sources (schemas/popart-ops.json) and graphrw's ai.graphcore data.
// Used by `validate --target popart` and by the `legalize` pass, which refuses
// to write while any finding remains.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "target/popart/graphcore_ops.h"

namespace graphrw::popart {

struct Finding {
  std::string check;  // the class: "ir-version", "opset", "op", "placement", ... (docs/cli.md lists them)
  std::string where;  // "model", "node 'x' (Op)", "graph input 'ids'", "callee 'layer'"
  std::string message;  // what is wrong and what PopART wants
};

// Every import failure graphrw knows of for PopART `version`, in a stable
// order (model-level findings first, then graph order).
std::vector<Finding> checkImport(const ir::Model& model, PopartVersion version = newestPopart());

// The finding classes, in the order checkImport reports them.
const std::vector<std::string>& findingClasses();

}  // namespace graphrw::popart
