// `graphrw inspect`: a summary of a model, as JSON (and text rendered from it).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ir/ir.h"

namespace graphrw {

nlohmann::json inspectModel(ir::Model& model);
std::string renderInspection(const nlohmann::json& summary);

}  // namespace graphrw
