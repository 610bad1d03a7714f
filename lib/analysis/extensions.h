// What a target (lib/target/NAME) adds to graphrw's generic layers, which never
// include it: the op schemas of its own domains, the reserved `__` attributes
// it reads (their types and checks), the attributes that say where a node runs
// (a rewrite's new nodes take the replaced node's), and its call op (a node that
// runs a graph held in an attribute; expand inlines it). A target registers one
// Extension from a static object in its library, which the driver links whole.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"  // the IR's forward declarations

namespace graphrw::ext {

using AttributeType = onnx::AttributeProto_AttributeType;

struct CallOp {
  std::string domain, opType, calleeAttribute;
};

struct Extension {
  std::string name;
  // The domains whose schemas registerSchemas adds, with the opset version a new import of each gets.
  std::vector<std::pair<std::string, int>> domains;
  // Adds the schemas to ONNX's registry (schemas.h's registerDomain); called once, before the first lookup.
  std::function<void()> registerSchemas;
  // The type the target reads a `__` attribute as; nothing when it does not know the name.
  std::function<std::optional<AttributeType>(const std::string& name)> reservedType;
  // The list type the target also accepts for the attribute on an op type, if any.
  std::function<std::optional<AttributeType>(const std::string& name, const std::string& opType)> reservedListType;
  // Problems with one attribute as the target reads it (empty when fine, or when it is not the target's).
  std::function<std::vector<std::string>(const onnx::AttributeProto&, const std::string& opType)> checkAttribute;
  // INT attributes saying where a node runs.
  std::vector<std::string> placementKeys;
  std::optional<CallOp> call;
};

// Adds `e`; returns true (for a static object's initializer).
bool registerExtension(Extension e);
const std::vector<Extension>& extensions();

// Every extension's schemas, registered once per process (thread-safe).
void registerSchemas();
// The opset version a new import of `domain` gets when an extension defines the domain.
std::optional<int> domainVersion(const std::string& domain);

// The first extension's answer for a reserved attribute; nothing when none knows it.
std::optional<AttributeType> reservedType(const std::string& name);
std::optional<AttributeType> reservedListType(const std::string& name, const std::string& opType);
// Every extension's problems with the attribute.
std::vector<std::string> checkAttribute(const onnx::AttributeProto& a, const std::string& opType = "");

// The placement attributes (every extension's keys, in registration order) `n` carries as INTs.
std::vector<onnx::AttributeProto> placementOf(const ir::Node& n);
// Sets each attribute on the nodes that lack it.
void applyPlacement(ir::Rewriter& rw, const std::vector<ir::Node*>& nodes,
                    const std::vector<onnx::AttributeProto>& placement);
// Every extension's placement keys, in registration order.
std::vector<std::string> placementKeys();

// The call op `n` is an instance of, if any.
const CallOp* callOp(const ir::Node& n);

}  // namespace graphrw::ext
