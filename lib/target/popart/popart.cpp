#include "target/popart/popart.h"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "analysis/attributes.h"
#include "ir/ir.h"
#include "ir/rewriter.h"
#include "support/embedded.h"

namespace graphrw::popart {
namespace {

const nlohmann::json& table() {
  static const nlohmann::json t = nlohmann::json::parse(embedded::file("popart-attributes.json"))["node_attributes"];
  return t;
}

const nlohmann::json& opsTable() {
  static const nlohmann::json t = nlohmann::json::parse(embedded::file("popart-ops.json"));
  return t;
}

bool listed(const nlohmann::json& list, const std::string& s) {
  for (const auto& v : list)
    if (v.get<std::string>() == s) return true;
  return false;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<onnx::AttributeProto_AttributeType> expectedType(const std::string& name) {
  auto it = table().find(name);
  if (it == table().end()) return std::nullopt;
  return ir::attributeTypeFromName((*it)["type"].get<std::string>());
}

std::optional<onnx::AttributeProto_AttributeType> listFormType(const std::string& name, const std::string& opType) {
  auto it = table().find(name);
  if (it == table().end() || !it->contains("list_form")) return std::nullopt;
  const auto& form = (*it)["list_form"];
  if (!listed(form["ops"], opType)) return std::nullopt;
  return ir::attributeTypeFromName(form["type"].get<std::string>());
}

std::vector<std::string> checkAttribute(const onnx::AttributeProto& a, const std::string& opType) {
  std::vector<std::string> problems;
  auto it = table().find(a.name());
  if (it == table().end()) return problems;
  const auto& spec = *it;
  auto expected = ir::attributeTypeFromName(spec["type"].get<std::string>());
  auto list = listFormType(a.name(), opType);
  if (expected && a.type() != *expected && (!list || a.type() != *list)) {
    std::string want = ir::attributeTypeName(*expected);
    if (list) want += " (or " + ir::attributeTypeName(*list) + " on " + opType + ")";
    problems.push_back("attribute '" + a.name() + "' is " + ir::attributeTypeName(a.type()) +
                       " but PopART reads it as " + want);
    return problems;
  }
  const std::string& n = a.name();
  auto range = [&](double v) {
    if (spec.contains("min") && v < spec["min"].get<double>())
      problems.push_back("attribute '" + n + "' is " + nlohmann::json(v).dump() + ", below " + spec["min"].dump());
    if (spec.contains("exclusive_min") && v <= spec["exclusive_min"].get<double>())
      problems.push_back("attribute '" + n + "' is " + nlohmann::json(v).dump() + "; it must be above " +
                         spec["exclusive_min"].dump());
    if (spec.contains("max") && v > spec["max"].get<double>())
      problems.push_back("attribute '" + n + "' is " + nlohmann::json(v).dump() + ", above " + spec["max"].dump());
  };
  auto intValue = [&](int64_t v) {
    range(static_cast<double>(v));
    if (spec.contains("values")) {
      bool ok = false;
      for (const auto& x : spec["values"]) ok |= x.get<int64_t>() == v;
      if (!ok)
        problems.push_back("attribute '" + n + "' = " + std::to_string(v) + " is not one of " + spec["values"].dump());
    }
  };
  auto stringValue = [&](const std::string& v) {
    if (spec.value("pattern_names", false) && !isPatternName(v))
      problems.push_back("attribute '" + n + "' names '" + v + "', which is not a PopART pattern (PopART throws)");
    if (!spec.contains("values")) return;
    bool ci = spec.value("case_insensitive", false);
    bool ok = false;
    for (const auto& x : spec["values"]) ok |= ci ? lower(x.get<std::string>()) == lower(v) : x.get<std::string>() == v;
    if (!ok) problems.push_back("attribute '" + n + "' = \"" + v + "\" is not one of " + spec["values"].dump());
  };
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      intValue(a.i());
      break;
    case onnx::AttributeProto::INTS:
      for (auto v : a.ints()) intValue(v);
      break;
    case onnx::AttributeProto::FLOAT:
      range(a.f());
      break;
    case onnx::AttributeProto::FLOATS:
      for (auto v : a.floats()) range(v);
      break;
    case onnx::AttributeProto::STRING:
      stringValue(a.s());
      break;
    case onnx::AttributeProto::STRINGS:
      if (spec.value("even_length", false) && a.strings_size() % 2 != 0)
        problems.push_back("attribute '" + n + "' has an odd number of strings (" + std::to_string(a.strings_size()) +
                           "); PopART reads it as key/value pairs and would read past the end");
      for (const auto& v : a.strings()) stringValue(v);
      break;
    default:
      break;
  }
  return problems;
}

std::vector<std::string> checkNodeAttributes(const ir::Node& node) {
  std::vector<std::string> problems;
  static const nlohmann::json neverEmit = nlohmann::json::parse(embedded::file("popart-attributes.json"))["never_emit"];
  for (const auto& a : node.attributes()) {
    if (!a.name().starts_with("__")) continue;
    if (listed(neverEmit, a.name()))
      problems.push_back("attribute '" + a.name() + "' is PopART's own; it replaces it on import");
    for (auto& p : checkAttribute(a.proto(), node.opType())) problems.push_back(std::move(p));
    auto it = table().find(a.name());
    if (it == table().end()) continue;
    for (const auto& other : it->value("requires", nlohmann::json::array())) {
      std::string o = other.get<std::string>();
      if (!node.attribute(o))
        problems.push_back("attribute '" + a.name() + "' needs '" + o + "' too (PopART throws without it)");
    }
    if (it->contains("same_length")) {
      std::string o = (*it)["same_length"].get<std::string>();
      if (const ir::Attribute* b = node.attribute(o)) {
        auto count = [](const onnx::AttributeProto& x) { return x.ints_size() + x.floats_size() + x.strings_size(); };
        if (count(a.proto()) != count(b->proto()))
          problems.push_back("attributes '" + a.name() + "' and '" + o + "' must have as many values (" +
                             std::to_string(count(a.proto())) + " and " + std::to_string(count(b->proto())) + ")");
      }
    }
  }
  return problems;
}

ImportSupport importSupport(const std::string& domain, const std::string& opType, int opset, int sinceVersion) {
  const auto& t = opsTable();
  if (listed(t["folded_at_import"], opType) && ir::isDefaultDomain(domain)) return {true, ""};
  if (listed(t["rewritten_before_import"], opType)) return {true, ""};
  bool graphcore = domain == "ai.graphcore";
  if (!graphcore && !ir::isDefaultDomain(domain))
    return {false, "PopART imports only the ai.onnx and ai.graphcore domains"};
  const auto& ops = t[graphcore ? "ai.graphcore" : "ai.onnx"];
  auto it = ops.find(opType);
  if (it == ops.end())
    return {false, "PopART has no " + std::string(graphcore ? "ai.graphcore::" : "") + opType + " op"};
  if (graphcore) return {true, ""};
  if (sinceVersion <= 0) return {false, "ONNX has no " + opType + " at opset " + std::to_string(opset)};
  std::vector<int> versions = it->get<std::vector<int>>();
  for (int v : versions)
    if (v == sinceVersion) return {true, ""};
  std::string have;
  for (int v : versions) have += (have.empty() ? "" : ", ") + std::to_string(v);
  return {false, "opset " + std::to_string(opset) + " selects " + opType + "-" + std::to_string(sinceVersion) +
                     ", PopART implements " + opType + " " + have};
}

bool hasOp(const std::string& domain, const std::string& opType) {
  const auto& t = opsTable();
  if (listed(t["folded_at_import"], opType) || listed(t["rewritten_before_import"], opType)) return true;
  if (domain == "ai.graphcore") return t["ai.graphcore"].contains(opType);
  return ir::isDefaultDomain(domain) && t["ai.onnx"].contains(opType);
}

bool foldedAtImport(const std::string& opType) { return listed(opsTable()["folded_at_import"], opType); }

bool isPatternName(const std::string& name) { return listed(opsTable()["pattern_names"], name); }

std::optional<int64_t> recomputeType(const ir::Node& n) {
  const ir::Attribute* a = n.attribute(kRecomputeAttribute);
  if (!a || a->type() != onnx::AttributeProto::INT) return std::nullopt;
  return a->proto().i();
}

bool isCheckpoint(const ir::Node& n) {
  return n.opType() == "Identity" && ir::isDefaultDomain(n.domain()) && recomputeType(n) == kCheckpoint;
}

std::vector<onnx::AttributeProto> checkpointAttributes() {
  onnx::AttributeProto recompute;
  recompute.set_name(kRecomputeAttribute);
  recompute.set_type(onnx::AttributeProto::INT);
  recompute.set_i(kCheckpoint);
  onnx::AttributeProto patterns;
  patterns.set_name("__exclude_patterns");
  patterns.set_type(onnx::AttributeProto::STRINGS);
  patterns.add_strings("PreUniRepl");
  patterns.add_strings("PostNRepl");
  return {recompute, patterns};
}

const char* const kPlacementAttributes[3] = {kIpuNumber, kPipelineStage, "__execution_phase"};

std::optional<int64_t> placementValue(const ir::Node& n, const char* key) {
  const ir::Attribute* a = n.attribute(key);
  if (!a || a->type() != onnx::AttributeProto::INT) return std::nullopt;
  return a->proto().i();
}

const ir::Node* mainGraphNode(const ir::Node* n) {
  while (n && n->graph()->parentNode()) n = n->graph()->parentNode();
  return n && !n->graph()->owningFunction() ? n : nullptr;  // a function body's node runs under no main-graph node
}

bool isCall(const ir::Node& n) { return n.domain() == kGraphcoreDomain && n.opType() == kCallOp; }

bool isFloatingPoint(int32_t dataType) {
  using TP = onnx::TensorProto;
  return dataType == TP::FLOAT || dataType == TP::FLOAT16 || dataType == TP::BFLOAT16 || dataType == TP::DOUBLE;
}

size_t fillPlacement(ir::Rewriter& rw, ir::Graph& g) {
  size_t filled = 0;
  for (const char* key : kPlacementAttributes) {
    bool used = false;
    for (const auto& n : g.nodes()) used |= n->attribute(key) != nullptr;
    if (!used) continue;
    // Nodes computing only from constants (PopART folds them at import) need none.
    std::unordered_set<const ir::Node*> constant;
    for (const auto& n : g.nodes()) {
      bool yes = foldedAtImport(n->opType()) && ir::isDefaultDomain(n->domain());
      if (!yes && !n->inputs().empty()) {
        yes = true;
        for (const ir::Value* v : n->inputs())
          if (v && !(v->producer() && constant.count(v->producer()))) yes = false;
      }
      if (yes && !n->attribute(key)) constant.insert(n.get());
    }
    auto valueOf = [&](const ir::Node& n) -> std::optional<int64_t> {
      const ir::Attribute* a = n.attribute(key);
      if (!a || a->type() != onnx::AttributeProto::INT) return std::nullopt;
      return a->proto().i();
    };
    // Forward (producers, in graph order), then backward (consumers) for what is left.
    std::vector<ir::Node*> missing;
    for (const auto& n : g.nodes())
      if (!n->attribute(key) && !constant.count(n.get())) missing.push_back(n.get());
    std::vector<ir::Node*> left;
    for (ir::Node* n : missing) {
      std::optional<int64_t> best;
      for (const ir::Value* v : n->inputs())
        if (v && v->producer())
          if (auto p = valueOf(*v->producer()); p && (!best || *p > *best)) best = p;
      if (!best) {
        left.push_back(n);
        continue;
      }
      rw.setAttribute(n, intAttribute(key, *best));
      ++filled;
    }
    for (auto it = left.rbegin(); it != left.rend(); ++it) {
      ir::Node* n = *it;
      std::optional<int64_t> first;
      for (const ir::Value* v : n->outputs()) {
        if (!v) continue;
        for (const ir::Use& u : v->uses())
          if (u.node->graph() == &g)
            if (auto c = valueOf(*u.node); c && (!first || *c < *first)) first = c;
      }
      if (!first) continue;
      rw.setAttribute(n, intAttribute(key, *first));
      ++filled;
    }
  }
  return filled;
}

bool shapeLikeOperand(const ir::Node& n, size_t input) {
  if (!ir::isDefaultDomain(n.domain())) return false;
  const std::string& op = n.opType();
  if (op == "Reshape" || op == "Expand" || op == "Tile" || op == "TopK" || op == "Upsample" || op == "OneHot" ||
      op == "Pad")
    return input == 1;
  if (op == "Slice" || op == "Resize") return input >= 1;
  if (op == "ConstantOfShape") return input == 0;
  return false;
}

}  // namespace graphrw::popart
