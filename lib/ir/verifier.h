// graphrw's IR verifier: checks the invariants every pass must keep.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace graphrw {

struct Finding {
  std::string where;  // "graph 'main'", "function ns::F"
  std::string message;  // names the node or value
};

// Every graph of the model: each value produced once; use-lists match node
// inputs; every use after its producer in node order; every value used is
// visible in its scope (no dangling use); names unique per scope.
std::vector<Finding> verify(ir::Model& model);
std::vector<Finding> verifyGraph(const ir::Graph& graph, const std::string& where);

// A cycle among the graph's nodes as one message naming them, if there is one.
std::optional<std::string> findCycle(const ir::Graph& graph);

}  // namespace graphrw
