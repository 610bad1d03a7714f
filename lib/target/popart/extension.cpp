// PopART's part in the generic layers (analysis/extensions.h): the ai.graphcore
// ops, the `__` attributes PopART reads, its placement attributes and
// ai.graphcore::Call.
#include "analysis/extensions.h"
#include "target/popart/graphcore_ops.h"
#include "target/popart/popart.h"

namespace graphrw::popart {
namespace {

ext::Extension extension() {
  ext::Extension e;
  e.name = "popart";
  // graphcore-ops.json's version; tests/unit/test_popart_check.cpp checks the two agree.
  e.domains = {{kGraphcoreDomain, 1}};
  e.registerSchemas = registerGraphcoreOps;
  e.reservedType = expectedType;
  e.reservedListType = listFormType;
  e.checkAttribute = [](const onnx::AttributeProto& a, const std::string& opType) { return checkAttribute(a, opType); };
  for (const char* key : kPlacementAttributes) e.placementKeys.emplace_back(key);
  e.call = ext::CallOp{kGraphcoreDomain, kCallOp, kCalleeAttribute};
  return e;
}

[[maybe_unused]] const bool registered = ext::registerExtension(extension());

}  // namespace
}  // namespace graphrw::popart
