// Protobuf messages -> IR objects: the model, a function, an attribute. The
// loader (lib/io) calls it on what it parsed; the Rewriter calls it to turn
// an AttributeProto into an IR attribute; analyses call it for functions they
// build (schema bodies, converted bodies, templates).
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "support/buffer.h"
#include "support/external_data.h"

namespace graphrw::wire {
class MainFields;
}

namespace graphrw::ir {

// Consumes `proto`. `payloads` are the views the wire stripper took out of
// it (TensorProto placeholders index them); external data resolves through
// `external`. `mainNodes` and `mainValueInfo`, when the stripper split them
// off, are the main graph's nodes and value_info entries as protobuf bytes:
// parsed one at a time (the nodes after the graph's inputs and initializers,
// the entries after its outputs), and let go of as they are. Throws Error(BadInput) naming what
// is wrong, e.g. a cycle.
std::unique_ptr<Model> buildModel(onnx::ModelProto& proto, const std::vector<Bytes>& payloads,
                                  std::shared_ptr<ExternalFiles> external, wire::MainFields* mainNodes = nullptr,
                                  wire::MainFields* mainValueInfo = nullptr);
// A function for `model` (not added to its library), e.g. a schema's body.
std::unique_ptr<Function> buildFunction(Model& model, onnx::FunctionProto proto);
// An attribute of `node` in `owner` built from its proto, subgraphs included, as the loader builds them.
Attribute buildAttribute(Model& model, Graph& owner, Node* node, onnx::AttributeProto proto);

}  // namespace graphrw::ir
