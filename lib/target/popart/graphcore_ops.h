// PopART's ai.graphcore opset 1 ops (schemas/graphcore-ops.json), registered
// with ONNX's schema registry so the checker, shape inference and graphrw's
// own attribute typing treat them like standard ops.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace graphrw {

// A PopART release, major.minor.
struct PopartVersion {
  int major = 0, minor = 0;
  auto operator<=>(const PopartVersion&) const = default;
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};
// "3.2" -> {3, 2}; nothing unless two decimal numbers (at most 3 digits each) joined by '.'.
std::optional<PopartVersion> parsePopartVersion(std::string_view text);
// The newest release graphrw's data describes (graphcore-ops.json's popart_newest).
PopartVersion newestPopart();
// The first release with ai.graphcore::`op` (graphcore-ops.json's since); nothing for an op the data lacks.
std::optional<PopartVersion> graphcoreOpSince(const std::string& op);

// Registers the ops with ONNX's schema registry once per process (thread-safe);
// later calls do nothing. Generic code gets them through schemas.h, which runs
// every target's registration (analysis/extensions.h) before the first lookup.
void registerGraphcoreOps();

// The data file, parsed.
const nlohmann::json& graphcoreOpsData();

}  // namespace graphrw
