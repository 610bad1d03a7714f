// The stage cost model's options (target/popart/stage_cost.h): optimizer names,
// sizes, and the calibration's schema, read from a rule file's "costs" or a
// file of its own.
#include <cctype>
#include <cmath>
#include <system_error>

#include "pass/json_schema.h"
#include "support/error.h"
#include "support/text_file.h"
#include "target/popart/stage_cost.h"

namespace graphrw::stage_cost {

using json = nlohmann::json;

std::optional<Optimizer> parseOptimizer(const std::string& name) {
  static const std::map<std::string, Optimizer> names = {{"none", Optimizer::None},
                                                         {"sgd", Optimizer::Sgd},
                                                         {"momentum", Optimizer::Momentum},
                                                         {"adam", Optimizer::Adam},
                                                         {"lamb", Optimizer::Lamb}};
  auto it = names.find(name);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

const char* optimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd:
      return "sgd";
    case Optimizer::Momentum:
      return "momentum";
    case Optimizer::Adam:
      return "adam";
    case Optimizer::Lamb:
      return "lamb";
    case Optimizer::None:
      break;
  }
  return "none";
}

int stateTensorsPerWeight(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd:
      return 1;
    case Optimizer::Momentum:
      return 2;
    case Optimizer::Adam:
    case Optimizer::Lamb:
      return 3;
    case Optimizer::None:
      break;
  }
  return 0;
}

uint64_t parseBytes(const std::string& text, const std::string& what) {
  auto bad = [&]() -> uint64_t {
    usageError(what + ": '" + text + "' is not a size (a number of bytes, or with KB, MB, GB, KiB, MiB or GiB)");
  };
  size_t end = 0;
  double number = 0;
  try {
    number = std::stod(text, &end);
  } catch (const std::exception&) {
    return bad();
  }
  static const std::map<std::string, double> units = {
      {"", 1},     {"B", 1},        {"KB", 1e3},        {"MB", 1e6},
      {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  auto unit = units.find(text.substr(end));
  if (unit == units.end() || !(number > 0) || !std::isfinite(number) ||
      !std::isdigit(static_cast<unsigned char>(text[0])))
    return bad();
  double bytes = std::round(number * unit->second);
  if (bytes < 1 || bytes > 9.0e18) return bad();
  return static_cast<uint64_t>(bytes);
}

const json& calibrationSchema() {
  static const json schema = [] {
    json factor = {{"type", "number"}, {"minimum", 0}, {"maximum", 1e6}};
    json op = {{"type", "object"},
               {"minProperties", 1},
               {"additionalProperties", false},
               {"properties", {{"flops_scale", factor}, {"flops_per_element", factor}, {"activation_scale", factor}}}};
    return json{{"type", "object"},
                {"additionalProperties", false},
                {"properties",
                 {{"reserve", {{"type", "string"}, {"minLength", 1}}},
                  {"ops", {{"type", "object"}, {"additionalProperties", op}}}}}};
  }();
  return schema;
}

Calibration parseCalibration(const json& j, const std::string& what) {
  if (auto e = SchemaSet::builtin().validateWith(calibrationSchema(), j))
    usageError(what + (e->pointer.empty() ? "" : " at " + e->pointer) + ": " + e->message);
  Calibration c;
  if (j.contains("reserve")) c.reserve = parseBytes(j["reserve"].get<std::string>(), what + "/reserve");
  if (j.contains("ops"))
    for (const auto& [name, entry] : j["ops"].items()) {
      if (name.empty()) usageError(what + "/ops: an op name is empty");
      OpCost& op = c.ops[name];
      op.flopsScale = entry.value("flops_scale", 1.0);
      op.flopsPerElement = entry.value("flops_per_element", 0.0);
      op.activationScale = entry.value("activation_scale", 1.0);
    }
  return c;
}

Calibration loadCalibration(const std::filesystem::path& file, const std::string& what) {
  constexpr uintmax_t kMaxBytes = 1 << 20;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) usageError(what + ": " + file.string() + " is not a regular file");
  if (std::filesystem::file_size(file, ec) > kMaxBytes)
    usageError(what + ": " + file.string() + " is too large (over 1 MiB)");
  json j = json::parse(readTextFile(file.string(), "cost calibration"), nullptr, false);
  if (j.is_discarded()) usageError(what + ": " + file.string() + ": not valid JSON");
  return parseCalibration(j, what + ": " + file.string());
}

std::string opKey(const ir::Node& n) {
  return ir::isDefaultDomain(n.domain()) ? n.opType() : n.domain() + "::" + n.opType();
}

}  // namespace graphrw::stage_cost
