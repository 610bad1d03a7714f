// A template (a replace template, a pattern's match or replacement) checked on
// its own, when the rule file is read: so a typo in a rule is one error naming
// the rule before any model is loaded, not a failure on the first model that
// happens to match (or, worse, a written model that nothing can run).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace graphrw::passes {

enum class TemplateRole {
  Match,  // a pattern's match graph: an attribute left out matches any value
  Replacement,  // what is written: every node as ONNX's schema wants it
};

// Throws Error(Usage) naming `where` and the node when:
// - an input or output is declared twice, or an output is an input;
// - a node's domain is not imported, or (for a domain ONNX's registry knows:
//   ai.onnx, ai.onnx.ml, ai.graphcore) the op does not exist at the imported
//   version (with the nearest name), or its inputs, outputs or attributes do
//   not fit the op's schema (for a match: attribute names and types only);
// - a node reads a value that is neither an input nor produced, a value is
//   produced twice, the nodes form a cycle, or an output is produced by nothing;
// - an `@formal` reference sits inside a subgraph (only a template's own
//   nodes take references), given as an attribute still holding `marker`.
void checkTemplate(const onnx::FunctionProto& fp, TemplateRole role, const std::string& where,
                   const std::string& marker);

}  // namespace graphrw::passes
