// The subcommand of every registered pass, generated from its PassSpec. Its
// flags become the JSON entry a rule file would hold, which goes through
// buildPass() exactly as a rule file's entry does: one parser, one validator.
#include <charconv>

#include "analysis/attributes.h"
#include "driver/cli_common.h"
#include "driver/rules.h"
#include "pass/selector.h"
#include "support/error.h"

namespace graphrw::cli {

using nlohmann::json;
using Kind = OptionSpec::Kind;

namespace {

// "-k,--key" -> "--key"
std::string longName(const std::string& flags) {
  auto comma = flags.rfind(',');
  return comma == std::string::npos ? flags : flags.substr(comma + 1);
}

// What --help shows for the value.
const char* valueName(Kind kind) {
  switch (kind) {
    case Kind::Integer:
      return "N";
    case Kind::Selectors:
      return "SEL";
    case Kind::List:
      return "A,B";
    case Kind::Pairs:
    case Kind::JsonPairs:
      return "K=V";
    case Kind::Json:
      return "JSON";
    default:
      return "TEXT";
  }
}

bool takesValue(Kind kind) { return kind != Kind::Flag && kind != Kind::NoFlag; }
bool repeatable(Kind kind) {
  return kind == Kind::Selectors || kind == Kind::List || kind == Kind::Pairs || kind == Kind::JsonPairs;
}

// The values a flag accepts: its schema's enum of strings.
std::vector<std::string> allowedValues(const OptionSpec& o) {
  std::vector<std::string> out;
  if (o.schema.is_object() && o.schema.contains("enum"))
    for (const auto& v : o.schema["enum"])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

// A default as --help shows it.
std::string defaultText(const json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::string out;
    for (const auto& v : value) out += (out.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
    return out;
  }
  return value.dump();
}

json pair(const std::string& flag, const std::string& text, bool asJson) {
  if (asJson) return parseAssignment(text, flag).second;
  return text.substr(text.find('=') + 1);
}

// One option's values as the JSON its pointer takes.
json optionJson(const OptionSpec& o, const std::vector<std::string>& values) {
  const std::string flag = longName(o.flags);
  if (o.convert) return o.convert(values);
  switch (o.kind) {
    case Kind::String:
      return values.front();
    case Kind::Integer: {
      const std::string& t = values.front();
      int64_t v = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      if (ec != std::errc() || end != t.data() + t.size())
        usageError(flag + " '" + t + "': expected an integer" +
                   (ec == std::errc::result_out_of_range ? " that fits 64 bits" : ""));
      return v;
    }
    case Kind::Flag:
      return true;
    case Kind::NoFlag:
      return false;
    case Kind::Selectors: {
      json list = json::array();
      for (const auto& t : values) list.push_back(Selector::parse(t).toJson());
      return list.size() == 1 ? list[0] : list;
    }
    case Kind::List: {
      json list = json::array();
      for (const auto& t : values)
        if (!t.empty()) list.push_back(t);
      return list;
    }
    case Kind::Pairs:
    case Kind::JsonPairs: {
      json object = json::object();
      for (const auto& t : values) {
        auto eq = t.find('=');
        if (eq == std::string::npos || eq == 0) usageError(flag + " '" + t + "': expected NAME=VALUE");
        if (object.contains(t.substr(0, eq)))
          usageError(flag + " '" + t + "': '" + t.substr(0, eq) + "' is given twice");
        object[t.substr(0, eq)] = pair(flag, t, o.kind == Kind::JsonPairs);
      }
      return object;
    }
    case Kind::Json: {
      auto j = json::parse(values.front(), nullptr, false);
      if (j.is_discarded()) usageError(flag + ": not valid JSON: " + values.front());
      return j;
    }
  }
  return nullptr;
}

}  // namespace

struct PassCommands::Command {
  const PassSpec* spec = nullptr;
  CLI::App* app = nullptr;
  std::string input, output;
  std::vector<std::vector<std::string>> values;  // per option, as given
  std::vector<int> flags;  // per option, how often a flag was given
  PipelineFlags pipeline;
  ExternalOptions external;

  bool given(size_t i) const { return takesValue(spec->options[i].kind) ? !values[i].empty() : flags[i] > 0; }
  std::string shown(size_t i) const {
    const auto& o = spec->options[i];
    return longName(o.flags) + (takesValue(o.kind) ? " " + values[i].front() : "");
  }

  // The pass's JSON entry, as a rule file would hold it.
  json entry() const {
    json e = {{"pass", spec->name}};
    for (size_t i = 0; i < spec->options.size(); ++i)
      if (given(i)) e[json::json_pointer(spec->options[i].target())] = optionJson(spec->options[i], values[i]);
    return e;
  }

  // Messages about the entry name the flag that gave the value: the option at
  // or above the pointer, else a labelling option below it, else any below it.
  std::string describe(const std::string& pointer) const {
    const auto& opts = spec->options;
    auto under = [&](const std::string& p, const std::string& prefix) {
      return p == prefix || p.starts_with(prefix + "/");
    };
    for (size_t i = 0; i < opts.size(); ++i)
      if (given(i) && under(pointer, opts[i].target())) return shown(i);
    for (size_t i = 0; i < opts.size(); ++i)
      if (given(i) && opts[i].labels && under(opts[i].target(), pointer)) return shown(i);
    for (size_t i = 0; i < opts.size(); ++i)
      if (given(i) && under(opts[i].target(), pointer)) return shown(i);
    return spec->name;
  }

  int run() {
    RuleContext where{"", "", [this](const std::string& p) { return describe(p); }};
    std::vector<std::shared_ptr<const Pass>> passes;
    passes.push_back(buildPass(*spec, entry(), where, ""));  // every option error before the model is read
    std::string out = outputPath(input, output, spec->outputTag);
    return runPipeline(input, out, std::move(passes), pipeline, external);
  }
};

PassCommands::PassCommands(CLI::App& app) {
  for (const PassSpec* spec : registeredPasses()) {
    auto c = std::make_unique<Command>();
    c->spec = spec;
    c->values.resize(spec->options.size());
    c->flags.resize(spec->options.size());
    CLI::App* cmd = app.add_subcommand(spec->name, spec->summary);
    c->app = cmd;
    cmd->add_option("model", c->input, "ONNX model, or - for stdin")->required();
    cmd->add_option("-o,--output", c->output,
                    "Output file, or - for stdout (default: MODEL." + spec->outputTag + ".onnx)");
    std::vector<CLI::Option*> added(spec->options.size(), nullptr);
    for (size_t i = 0; i < spec->options.size(); ++i) {
      const OptionSpec& o = spec->options[i];
      if (o.flags.empty()) continue;  // a key only rule files set
      CLI::Option* opt = nullptr;
      if (!takesValue(o.kind)) {
        opt = cmd->add_flag(o.flags, c->flags[i], o.help);
      } else {
        opt = cmd->add_option(o.flags, c->values[i], o.help)->type_size(1)->allow_extra_args(false);
        opt->type_name(valueName(o.kind));
        if (!repeatable(o.kind)) opt->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
        if (o.kind == Kind::List) opt->delimiter(',');
        if (auto allowed = allowedValues(o); !allowed.empty()) opt->check(CLI::IsMember(allowed));
        if (o.kind != Kind::Flag && o.kind != Kind::NoFlag && !o.defaultValue.is_null())
          opt->default_str(defaultText(o.defaultValue));
      }
      if (o.required) opt->required();
      added[i] = opt;
    }
    for (size_t i = 0; i < spec->options.size(); ++i) {
      if (!added[i]) continue;
      for (const auto& other : spec->options[i].excludes) added[i]->excludes(cmd->get_option(other));
      for (const auto& other : spec->options[i].needs) added[i]->needs(cmd->get_option(other));
    }
    c->pipeline.add(cmd);
    c->external.add(cmd);
    if (!spec->examples.empty()) {
      std::string footer = "\nExamples:\n";
      for (const auto& e : spec->examples) footer += "  " + e + "\n";
      cmd->footer(footer);
    }
    commands_.push_back(std::move(c));
  }
}

PassCommands::~PassCommands() = default;

std::optional<int> PassCommands::runParsed() {
  for (auto& c : commands_)
    if (c->app->parsed()) return c->run();
  return std::nullopt;
}

}  // namespace graphrw::cli
