// graphrw's one way into ONNX's schema registry. The schemas targets add for
// their own domains (analysis/extensions.h) are registered before the first
// lookup. libonnx builds every schema of every opset on first use (about
// 17 ms), so a command that never looks one up (convert) does not pay it:
// nothing registers eagerly. tests/arch/check_tree.py keeps
// onnx::OpSchemaRegistry out of every other file.
#pragma once

#include <onnx/defs/schema.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphrw {

const onnx::OpSchema* findSchema(const std::string& op, int version, const std::string& domain);
onnx::ISchemaRegistry* schemaRegistry();
std::vector<onnx::OpSchema> allSchemas();
// ONNX's known domains and their opset ranges, targets' domains included.
const std::unordered_map<std::string, std::pair<int, int>>& domainVersionRanges();

// For a target's registerSchemas: declares `domain` at `version` (unless it is
// known already) and registers each schema no one registered before.
void registerDomain(const std::string& domain, int version, std::vector<onnx::OpSchema> schemas);

}  // namespace graphrw
