#include "analysis/schemas.h"

#include "analysis/extensions.h"

namespace graphrw {

void registerDomain(const std::string& domain, int version, std::vector<onnx::OpSchema> schemas) {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  if (!ranges.Map().count(domain)) ranges.AddDomainToVersion(domain, version, version);
  for (auto& s : schemas) {
    if (onnx::OpSchemaRegistry::Schema(s.Name(), version, domain)) continue;  // someone registered it already
    onnx::RegisterSchema(std::move(s));
  }
}

const onnx::OpSchema* findSchema(const std::string& op, int version, const std::string& domain) {
  ext::registerSchemas();
  return onnx::OpSchemaRegistry::Schema(op, version, domain);
}

onnx::ISchemaRegistry* schemaRegistry() {
  ext::registerSchemas();
  return onnx::OpSchemaRegistry::Instance();
}

std::vector<onnx::OpSchema> allSchemas() {
  ext::registerSchemas();
  return onnx::OpSchemaRegistry::get_all_schemas();
}

const std::unordered_map<std::string, std::pair<int, int>>& domainVersionRanges() {
  ext::registerSchemas();
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
}

}  // namespace graphrw
