// outline's options (from a rule file's entry or the generated command line)
// and its registration; the pass itself is in outline.cpp.
#include "passes/outline.h"
#include "support/error.h"

namespace graphrw::passes {

OutlineOptions::Mode parseOutlineMode(const std::string& text) {
  if (text == "call") return OutlineOptions::Mode::Call;
  if (text == "attributes") return OutlineOptions::Mode::Attributes;
  if (text == "function") return OutlineOptions::Mode::Function;
  usageError("outline mode must be 'call', 'attributes' or 'function', not '" + text + "'");
}

OutlineOptions outlineOptionsFromJson(const nlohmann::json& j, const RuleContext& rules, const std::string& pointer) {
  OutlineOptions o;
  auto at = [&](const std::string& p) { return rules.at(p); };
  o.select = SelectorSet::fromJson(j["select"], at, pointer + "/select");
  o.mode = parseOutlineMode(j.value("mode", std::string("call")));
  if (j.contains("keys"))
    for (const auto& [k, v] : j["keys"].items()) o.keys.emplace_back(k, v.get<std::string>());
  o.domain = j.value("domain", o.domain);
  o.allowNoMatch = j.value("allow_no_match", false);
  if (o.mode == OutlineOptions::Mode::Attributes && o.keys.empty())
    usageError(rules.at(pointer) + ": mode 'attributes' needs keys");
  if (o.mode != OutlineOptions::Mode::Attributes && !o.keys.empty())
    usageError(rules.at(pointer + "/keys") + ": keys are for mode 'attributes'");
  return o;
}

namespace {

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = "outline",
    .summary = "Turn repeated blocks into shared ai.graphcore::Call bodies, local functions or __outline keys",
    .schema = "passes/outline.schema.json",
    .outputTag = "outlined",
    .options =
        {
            {.flags = "--select", .pointer = "/select", .kind = Kind::Selectors,
             .help = "Blocks: a selector (key=value,...; repeat for any-of); scope= groups nodes by prefix",
             .required = true},
            {.flags = "--mode", .pointer = "/mode", .kind = Kind::String,
             .help = "call (ai.graphcore::Call), function (local functions) or attributes (__outline keys)",
             .allowed = {"call", "function", "attributes"}, .defaultValue = "call"},
            {.flags = "--key", .pointer = "/keys", .kind = Kind::Pairs,
             .help = "K=V: an __outline key/value pair (mode attributes; repeatable)"},
            {.flags = "--domain", .pointer = "/domain", .kind = Kind::String,
             .help = "Mode function: the new functions' domain", .defaultValue = "graphrw.outlined"},
            {.flags = "--allow-no-match", .pointer = "/allow_no_match", .kind = Kind::Flag,
             .help = "A selector matching nothing is a warning, not an error"},
        },
    .examples =
        {
            "graphrw outline model.onnx --select 'scope=/encoder/layer.*'",
            "graphrw outline model.onnx --select op_type=BertLayer --mode function",
            "graphrw outline model.onnx --select 'scope=/encoder/layer.*' --mode attributes --key layer=encoder",
        },
    .create = [](const nlohmann::json& entry, const RuleContext& where, const std::string& pointer) {
      return createOutlinePass(outlineOptionsFromJson(entry, where, pointer));
    },
}};

}  // namespace

}  // namespace graphrw::passes
