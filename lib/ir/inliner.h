// Inlining: replaces a call node by a copy of a body graph (a model-local
// function, a schema function, an ai.graphcore::Call callee, a template).
// Used by expand, replace and outline alike. Inlining is an edit, so it lives
// in the IR layer beside the Rewriter and counts what it creates through it.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

// Declared before the IR's headers are read: ir/inline_copier.h, which every
// IR header includes, needs these.
namespace graphrw::ir {
struct Attribute;
class Graph;
class Node;
class Rewriter;
class Value;
}  // namespace graphrw::ir

namespace graphrw {

// The values a body's ref_attr_name attributes may take.
struct AttributeEnv {
  std::map<std::string, const ir::Attribute*> call;  // the call node's attributes
  std::map<std::string, onnx::AttributeProto> defaults;  // the body's own defaults
  static AttributeEnv of(const ir::Node& call);
};

struct InlineResult {
  std::vector<ir::Node*> created;
  std::map<const ir::Value*, ir::Value*> valueMap;  // body value -> value in the target graph
};

// `prefix` names the copies: node `<prefix>/<body node name>`, value
// `<prefix>/<inner name>`, made unique by the target scope's name tables.
// The call's own output values keep their names and are produced by the copy.
// Throws Error(BadInput) when the call's arity does not fit the body.
InlineResult inlineBody(ir::Rewriter& rw, ir::Node* call, const ir::Graph& body, const AttributeEnv& env,
                        const std::string& prefix);

// `<prefix>/<name>`, without doubling a '/' that `name` starts with.
std::string joinName(std::string_view prefix, std::string_view name);

}  // namespace graphrw

#include "ir/ir.h"  // IWYU pragma: export
#include "ir/rewriter.h"  // IWYU pragma: export
