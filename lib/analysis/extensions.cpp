#include "analysis/extensions.h"

#include <mutex>

#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw::ext {

namespace {
std::vector<Extension>& registry() {
  static std::vector<Extension> all;
  return all;
}
}  // namespace

bool registerExtension(Extension e) {
  registry().push_back(std::move(e));
  return true;
}

const std::vector<Extension>& extensions() { return registry(); }

void registerSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const auto& e : extensions())
      if (e.registerSchemas) e.registerSchemas();
  });
}

std::optional<int> domainVersion(const std::string& domain) {
  for (const auto& e : extensions())
    for (const auto& [name, version] : e.domains)
      if (name == domain) return version;
  return std::nullopt;
}

std::optional<AttributeType> reservedType(const std::string& name) {
  for (const auto& e : extensions())
    if (e.reservedType)
      if (auto t = e.reservedType(name)) return t;
  return std::nullopt;
}

std::optional<AttributeType> reservedListType(const std::string& name, const std::string& opType) {
  for (const auto& e : extensions())
    if (e.reservedListType)
      if (auto t = e.reservedListType(name, opType)) return t;
  return std::nullopt;
}

std::vector<std::string> checkAttribute(const onnx::AttributeProto& a, const std::string& opType) {
  std::vector<std::string> problems;
  for (const auto& e : extensions())
    if (e.checkAttribute)
      for (auto& p : e.checkAttribute(a, opType)) problems.push_back(std::move(p));
  return problems;
}

std::vector<std::string> placementKeys() {
  std::vector<std::string> keys;
  for (const auto& e : extensions()) keys.insert(keys.end(), e.placementKeys.begin(), e.placementKeys.end());
  return keys;
}

std::vector<onnx::AttributeProto> placementOf(const ir::Node& n) {
  std::vector<onnx::AttributeProto> out;
  for (const auto& e : extensions())
    for (const auto& key : e.placementKeys)
      if (const ir::Attribute* a = n.attribute(key); a && a->type() == onnx::AttributeProto::INT)
        out.push_back(a->proto());
  return out;
}

void applyPlacement(ir::Rewriter& rw, const std::vector<ir::Node*>& nodes,
                    const std::vector<onnx::AttributeProto>& placement) {
  for (ir::Node* n : nodes)
    for (const auto& a : placement)
      if (!n->attribute(a.name())) rw.setAttribute(n, a);
}

const CallOp* callOp(const ir::Node& n) {
  for (const auto& e : extensions())
    if (e.call && n.opType() == e.call->opType && n.domain() == e.call->domain) return &*e.call;
  return nullptr;
}

}  // namespace graphrw::ext
