// outline's options (from a rule file's entry or the generated command line)
// and its registration; the pass itself is in outline.cpp.
#include "passes/popart/outline/outline.h"
#include "support/error.h"

namespace graphrw::passes {

OutlineOptions::Mode OutlineOptions::parseMode(const std::string& text) {
  if (text == "call") return OutlineOptions::Mode::Call;
  if (text == "attributes") return OutlineOptions::Mode::Attributes;
  if (text == "function") return OutlineOptions::Mode::Function;
  usageError("outline mode must be 'call', 'attributes' or 'function', not '" + text + "'");
}

void OutlineOptions::check() const {
  if (select.empty()) usageError("outline needs a selector (--select)");
  if (mode == OutlineOptions::Mode::Attributes && keys.empty())
    usageError("outline --mode attributes needs at least one --key K=V");
  if (mode != OutlineOptions::Mode::Attributes && !keys.empty()) usageError("outline: --key is for --mode attributes");
}

OutlineOptions outlineOptionsFromJson(const nlohmann::json& given, const RuleContext& rules,
                                      const std::string& pointer) {
  const nlohmann::json j = withDefaults(kOutlinePass, given);
  OutlineOptions o;
  auto at = [&](const std::string& p) { return rules.at(p); };
  o.select = SelectorSet::fromJson(j.at("select"), at, pointer + "/select");
  o.mode = OutlineOptions::parseMode(j.at("mode").get<std::string>());
  if (j.contains("keys"))
    for (const auto& [k, v] : j["keys"].items()) o.keys.emplace_back(k, v.get<std::string>());
  o.domain = j.at("domain").get<std::string>();
  o.allowNoMatch = j.at("allow_no_match").get<bool>();
  if (o.mode == OutlineOptions::Mode::Attributes && o.keys.empty())
    usageError(rules.at(pointer) + ": mode 'attributes' needs keys");
  if (o.mode != OutlineOptions::Mode::Attributes && !o.keys.empty())
    usageError(rules.at(pointer + "/keys") + ": keys are for mode 'attributes'");
  return o;
}

namespace {

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = kOutlinePass,
    .summary = "Turn repeated blocks into shared ai.graphcore::Call bodies, local functions or __outline keys",
    .outputTag = "outlined",
    .options =
        {
            {.key = "select",
             .flags = "--select",
             .kind = Kind::Selectors,
             .help = "The blocks: nodes, calls of a local function, or scopes (each distinct prefix is one block); "
                     "key=value,... (repeat for any-of)",
             .schema = {{"$ref", "../rules.schema.json#/$defs/selectors"}},
             .required = true},
            {.key = "mode",
             .flags = "--mode",
             .kind = Kind::String,
             .help = "call: ai.graphcore::Call nodes; function: model-local functions; attributes: __outline keys on "
                     "the blocks' nodes",
             .schema = {{"enum", {"call", "function", "attributes"}}},
             .defaultValue = "call"},
            {.key = "keys",
             .flags = "--key",
             .kind = Kind::Pairs,
             .help = "Mode attributes: the __outline key/value pairs, K=V (repeatable)",
             .schema = {{"type", "object"}, {"minProperties", 1}, {"additionalProperties", {{"type", "string"}}}}},
            {.key = "domain",
             .flags = "--domain",
             .kind = Kind::String,
             .help = "Mode function: the domain of the new functions",
             .schema = {{"type", "string"}, {"minLength", 1}},
             .defaultValue = "graphrw.outlined"},
            {.key = "allow_no_match",
             .flags = "--allow-no-match",
             .kind = Kind::Flag,
             .help = "A selector matching nothing is a warning, not an error",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
        },
    .examples =
        {
            "graphrw outline model.onnx --select 'scope=/encoder/layer.*'",
            "graphrw outline model.onnx --select op_type=BertLayer --mode function",
            "graphrw outline model.onnx --select 'scope=/encoder/layer.*' --mode attributes --key layer=encoder",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext& where, const std::string& pointer) {
          return createOutlinePass(outlineOptionsFromJson(entry, where, pointer));
        },
}};

}  // namespace

}  // namespace graphrw::passes
