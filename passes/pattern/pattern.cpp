#include "passes/pattern/pattern.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <vector>

#include "analysis/extensions.h"
#include "analysis/opsets.h"
#include "analysis/schemas.h"
#include "fold/weights.h"
#include "pass/json_schema.h"
#include "passes/replace/replace.h"
#include "support/error.h"
#include "support/text_file.h"

namespace graphrw::passes {
namespace {

using namespace ir;
using Kind = OptionSpec::Kind;

constexpr uintmax_t kMaxRulesBytes = 4 << 20;
constexpr size_t kListedMatches = 1000;  // per rule, in the report's "at"

// A later rule may have matched (and erased) what an earlier one made: fold
// only the made nodes still in the model, once each, at the first place
// (a freed address reused by a newer node is that node). By address only (a
// made node may be freed): the made addresses sorted, a state each (0 gone,
// 1 alive, 2 kept already); 9 bytes a made node, where three hash sets took
// about 120 MB for a million.
void keepAliveOnce(Model& model, std::vector<Node*>& created) {
  std::vector<const Node*> sorted(created.begin(), created.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<uint8_t> state(sorted.size(), 0);
  auto slot = [&](const Node* n) -> uint8_t* {
    auto it = std::lower_bound(sorted.begin(), sorted.end(), n);
    return it != sorted.end() && *it == n ? &state[static_cast<size_t>(it - sorted.begin())] : nullptr;
  };
  model.walkGraphs([&](Graph& g) {
    for (const auto& n : g.nodes())
      if (uint8_t* st = slot(n.get())) *st = 1;
  });
  std::erase_if(created, [&](const Node* n) {
    uint8_t* st = slot(n);
    if (!st || *st != 1) return true;  // gone, or kept at its first place already
    *st = 2;
    return false;
  });
}

class PatternPass final : public Pass {
 public:
  explicit PatternPass(PatternOptions options) : options_(std::move(options)) {
    ext::registerSchemas();
    for (const auto& r : options_.rules) patterns_.emplace_back(r.match, r.replace, r.where, r.constraints);
  }
  std::string name() const override { return kPatternPass; }

  void run(Model& model, PassContext& context) const override {
    Rewriter& rw = context.rewriter;
    WeightFolder weights(rw);
    std::vector<Graph*> graphs;
    model.walkGraphs([&](Graph& g) { graphs.push_back(&g); });
    nlohmann::json rules = nlohmann::json::array();
    std::vector<Node*> created;
    size_t total = 0;
    std::map<std::string, std::pair<size_t, size_t>> groups;  // group -> matches, applicable rules
    for (size_t r = 0; r < patterns_.size(); ++r) {
      const Pattern& p = patterns_[r];
      size_t count = 0, applicable = 0;
      nlohmann::json at = nlohmann::json::array();
      for (Graph* g : graphs) {
        // A rule written for some ai.onnx versions leaves graphs at others alone.
        auto scope = scopeOpsets(model, *g);
        auto onnxVersion = scope.count("") ? scope.at("") : scope.count("ai.onnx") ? scope.at("ai.onnx") : 0;
        if (onnxVersion && (onnxVersion < options_.rules[r].minOpset || onnxVersion > options_.rules[r].maxOpset))
          continue;
        ++applicable;
        // Matches of one rule do not overlap; what earlier rules matched is gone
        // (apply erased it), so the set of taken nodes lives for one find only.
        PatternMatches matches;
        {
          FlatPointerSet<Node> taken;
          matches = p.find(*g, taken, options_.maxMatchSteps);
        }
        // What was matched, for --dry-run: the node producing each match's
        // first output, for the first kListedMatches of a rule (a million-node
        // graph's 500,000 labels would cost more memory than its nodes).
        for (const auto& m : matches)
          if (at.size() < kListedMatches) at.push_back(nodeLabel(*p.anchor(m)));
        count += matches.size();
        auto made = p.apply(model, rw, *g, matches);
        created.insert(created.end(), made.begin(), made.end());
      }
      const PatternRule& rule = options_.rules[r];
      if (!rule.group.empty()) {
        groups[rule.group].first += count;
        groups[rule.group].second += applicable ? 1 : 0;
      } else if (!count && applicable && !rule.allowNoMatch) {
        reportNoMatch("pattern", p.where() + ": rule '" + p.name() + "' matched nothing", options_.allowNoMatch);
      }
      nlohmann::json entry = {{"rule", p.name()}, {"matched", count}, {"at", at}};
      if (count > at.size()) entry["at_omitted"] = count - at.size();
      rules.push_back(std::move(entry));
      total += count;
    }
    for (const auto& [group, tally] : groups)
      if (!tally.first && tally.second)
        reportNoMatch("pattern", group + ": none of its " + std::to_string(tally.second) + " alternative rules matched",
                      options_.allowNoMatch);
    keepAliveOnce(model, created);
    if (options_.fold) weights.fold(created);
    size_t pruned = pruneUnusedInitializers(rw, weights.pruneCandidates());
    context.matched = total;
    context.details["rules"] = rules;
    context.details["weights_folded"] = weights.folded();
    context.details["initializers_created"] = weights.initializersCreated();
    context.details["initializers_removed"] = pruned;
  }

 private:
  PatternOptions options_;
  std::vector<Pattern> patterns_;
};

PatternRule ruleFromJson(const nlohmann::json& r, const std::string& where) {
  PatternRule rule;
  rule.where = where;
  rule.match = parseTemplate(r["match"].get<std::string>(), where + "/match", TemplateRole::Match);
  rule.replace = parseTemplate(r["replace"].get<std::string>(), where + "/replace");
  rule.constraints.weights = r.value("weights", std::vector<std::string>{});
  rule.constraints.constants = r.value("constants", std::vector<std::string>{});
  rule.constraints.commutative = r.value("commutative", true);
  rule.allowNoMatch = r.value("allow_no_match", false);
  if (r.contains("opsets")) {
    const auto& range = r["opsets"];
    if (!range.is_array() || range.size() != 2 || !range[0].is_number_integer() || !range[1].is_number_integer() ||
        range[0].get<int64_t>() > range[1].get<int64_t>())
      usageError(where + "/opsets: expected [MIN, MAX], the ai.onnx versions the rule applies to");
    rule.minOpset = range[0].get<int64_t>();
    rule.maxOpset = range[1].get<int64_t>();
  }
  return rule;
}

// One rule of "rules" (and of a rules_file): the JSON Schema of its fields.
const nlohmann::json kRuleSchema = nlohmann::json::parse(R"json({
  "type": "object",
  "properties": {
    "match": {"type": "string", "minLength": 1, "description": "The match graph: an ONNX function (textual syntax)."},
    "replace": {"type": "string", "minLength": 1,
        "description": "The replacement: an ONNX function with as many inputs and outputs."},
    "weights": {"type": "array", "items": {"type": "string"}, "description": "Match inputs that must be initializers."},
    "constants": {"type": "array", "items": {"type": "string"},
        "description": "Match inputs that must be constants (initializers or Constant outputs)."},
    "opsets": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2, "maxItems": 2,
        "description": "[MIN, MAX]: the graphs' ai.onnx versions the rule applies to (default: all)."},
    "commutative": {"type": "boolean",
        "description": "Add and Mul match with their inputs in either order (default true)."},
    "allow_no_match": {"type": "boolean", "description": "This rule matching nothing is fine (default false)."},
    "description": {"type": "string"}
  },
  "required": ["match", "replace"],
  "additionalProperties": false
})json");

// The rules of one rules file (a {"rules": [...]} file, or a library rule file
// with pattern passes, whose allow_no_match makes its rules alternatives).
void rulesFromFile(std::filesystem::path file, const RuleContext& where, const std::string& pointer,
                   PatternOptions& o) {
  if (file.is_relative()) file = where.baseDir() / file;
  std::string at = where.at(pointer);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) usageError(at + ": " + file.string() + " is not a regular file");
  if (std::filesystem::file_size(file, ec) > kMaxRulesBytes) usageError(at + ": " + file.string() + " is too large");
  auto j = nlohmann::json::parse(readTextFile(file.string(), "pattern rules file"), nullptr, false);
  std::vector<std::string> groups;  // per rule
  std::vector<std::string> origins;  // per rule of a library file: its pointer there
  if (j.is_object() && j.contains("passes") && j["passes"].is_array()) {
    nlohmann::json rules = nlohmann::json::array();
    for (size_t k = 0; k < j["passes"].size(); ++k) {
      const auto& p = j["passes"][k];
      if (!p.is_object() || !p.contains("pass") || p["pass"] != kPatternPass) continue;
      std::string in = "/passes/" + std::to_string(k);
      if (auto e = SchemaSet::builtin().validate(p, "passes/" + std::string(kPatternPass) + ".schema.json"))
        usageError(at + ": " + file.string() + ": " + in + e->pointer + ": " + e->message);
      if (!p.contains("rules")) continue;
      bool alternatives = p.value("allow_no_match", false);
      for (size_t r = 0; r < p["rules"].size(); ++r) {
        origins.push_back(in + "/rules/" + std::to_string(r));
        rules.push_back(p["rules"][r]);
        groups.push_back(alternatives ? file.string() + ": " + in : "");
      }
    }
    j = {{"rules", rules}};
  }
  if (j.is_object() && j.contains("rules") && j["rules"].is_array())
    for (size_t i = 0; i < j["rules"].size(); ++i)
      if (auto e = SchemaSet::builtin().validateWith(kRuleSchema, j["rules"][i]))
        usageError(at + ": " + file.string() + ": " +
                   (i < origins.size() ? origins[i] : "/rules/" + std::to_string(i)) + e->pointer + ": " + e->message);
  if (j.is_discarded() || !j.is_object() || !j.contains("rules") || !j["rules"].is_array() || j["rules"].empty())
    usageError(at + ": " + file.string() +
               " is not JSON of the form {\"rules\": [{\"match\": ..., \"replace\": ...}, ...]} "
               "(or a rule file with pattern passes)");
  for (size_t i = 0; i < j["rules"].size(); ++i) {
    const auto& r = j["rules"][i];
    std::string rw = file.string() + ": /rules/" + std::to_string(i);
    if (!r.is_object() || !r.contains("match") || !r.contains("replace") || !r["match"].is_string() ||
        !r["replace"].is_string())
      usageError(rw + ": a rule needs \"match\" and \"replace\" (ONNX functions as text)");
    o.rules.push_back(ruleFromJson(r, rw));
    if (i < groups.size()) o.rules.back().group = groups[i];
  }
}

PatternOptions optionsFromJson(const nlohmann::json& entry, const RuleContext& where, const std::string& pointer) {
  ext::registerSchemas();  // replacements may use ai.graphcore ops, whose attribute types `@` references need
  PatternOptions o;
  o.allowNoMatch = entry.at("allow_no_match").get<bool>();
  o.fold = entry.at("fold").get<bool>();
  o.maxMatchSteps = entry.at("max_match_steps").get<uint64_t>();
  if (entry.contains("rules")) {
    for (size_t i = 0; i < entry["rules"].size(); ++i)
      o.rules.push_back(ruleFromJson(entry["rules"][i], where.at(pointer + "/rules/" + std::to_string(i))));
    return o;
  }
  std::vector<std::string> files;
  if (entry["rules_file"].is_string())
    files.push_back(entry["rules_file"].get<std::string>());
  else
    files = entry["rules_file"].get<std::vector<std::string>>();
  for (size_t f = 0; f < files.size(); ++f)
    rulesFromFile(files[f], where,
                  pointer + "/rules_file" + (entry["rules_file"].is_string() ? "" : "/" + std::to_string(f)), o);
  return o;
}

const RegisterPass registration{
    PassSpec{
        .name = kPatternPass,
        .summary = "Declarative multi-node rewrites: match graphs and replacements in ONNX's textual syntax",
        .description = "Declarative multi-node rewrites: each rule a match graph and a replacement in ONNX's textual "
                       "function syntax, with constraints; non-overlapping matches in graph order; replacement ops on "
                       "weights folded into initializers.",
        .outputTag = "patterned",
        .options =
            {
                {.key = "rules",
                 .help = "The rules, applied in order",
                 .schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"$ref", "#/$defs/rule"}}}}},
                {.key = "rules_file",
                 .flags = "--rules",
                 .kind = Kind::List,
                 .help =
                     "JSON files (repeatable) holding {\"rules\": [{\"match\": TEXT, \"replace\": TEXT, ...}, ...]}, "
                     "or "
                     "rule files with pattern passes (the library in examples/patterns/: a pass that allows no match "
                     "holds alternatives, an error only when none matches), relative to the rule file",
                 .schema = {{"oneOf", nlohmann::json::array({{{"type", "string"}, {"minLength", 1}},
                                                             {{"type", "array"},
                                                              {"minItems", 1},
                                                              {"items", {{"type", "string"}, {"minLength", 1}}}}})}}},
                {.key = "allow_no_match",
                 .flags = "--allow-no-match",
                 .kind = Kind::Flag,
                 .help = "A rule matching nothing is a warning, not an error",
                 .schema = {{"type", "boolean"}},
                 .defaultValue = false},
                {.key = "fold",
                 .flags = "--no-fold",
                 .kind = Kind::NoFlag,
                 .help = "Fold replacement ops that compute only from weights and constants into initializers "
                         "(--no-fold: keep them as ops)",
                 .schema = {{"type", "boolean"}},
                 .defaultValue = true},
                {.key = "max_match_steps",
                 .flags = "--max-match-steps",
                 .kind = Kind::Integer,
                 .help = "The steps (a match node tried on a model node) one match attempt may take before the pass "
                         "stops with exit 5; tried pairs and failures are remembered, so only a rule ambiguous in the "
                         "model's structure comes near it",
                 .schema = {{"type", "integer"}, {"minimum", 1}},
                 .defaultValue = kDefaultMaxMatchSteps},
            },
        .defs = {{"rule", kRuleSchema}},
        .constraints = {{"oneOf", {{{"required", {"rules"}}}, {{"required", {"rules_file"}}}}}},
        .examples =
            {
                "graphrw pattern model.onnx --rules gelu.json",
                "graphrw pattern model.onnx --rules qkv.json --dry-run --report -",
            },
        .create = [](const nlohmann::json& entry, const RuleContext& where,
                     const std::string& pointer) { return createPatternPass(optionsFromJson(entry, where, pointer)); },
    }};

}  // namespace

std::unique_ptr<Pass> createPatternPass(PatternOptions options) {
  if (options.rules.empty()) usageError("pattern needs at least one rule");
  return std::make_unique<PatternPass>(std::move(options));
}

}  // namespace graphrw::passes
