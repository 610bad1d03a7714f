// The commands that are not passes: inspect, convert, schema, compare and
// validate. Each declares its subcommand and returns what runs when it was
// parsed (cli_common.h's Command); cli.cpp parses and dispatches.
#include <charconv>
#include <cmath>
#include <sstream>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "analysis/graphcore_ops.h"
#include "analysis/popart_check.h"
#include "driver/cli_common.h"
#include "driver/compare.h"
#include "driver/inspect.h"
#include "driver/rules.h"
#include "driver/validate.h"
#include "io/loader.h"
#include "support/error.h"
#include "support/json_text.h"

namespace graphrw::cli {

Command addInspectCommand(CLI::App& app) {
  struct Args {
    std::string input;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* inspect = app.add_subcommand("inspect", "Summarise a model: opsets, ops, functions, weights, PopART attributes");
  inspect->add_option("model", args->input, "ONNX model, or - for stdin")->required();
  inspect->add_flag("--json", args->json, "Print JSON");
  inspect->footer("\nExamples:\n  graphrw inspect model.onnx\n  graphrw inspect --json model.onnx | jq '.ops'\n"
                  "  graphrw expand model.onnx -o - | graphrw inspect -\n");
  return {inspect, [args] {
            auto model = loadModel(args->input);
            auto summary = inspectModel(*model);
            if (args->json)
              std::cout << summary.dump(2) << "\n";
            else
              std::cout << renderInspection(summary);
            releaseAtExit(model);
            return 0;
          }};
}

Command addConvertCommand(CLI::App& app) {
  struct Args {
    std::string input, output;
    ExternalOptions external;
  };
  auto args = std::make_shared<Args>();
  auto* convert = app.add_subcommand("convert", "Load and write a model again (external data conversion)");
  convert->add_option("model", args->input, "ONNX model, or - for stdin")->required();
  convert->add_option("-o,--output", args->output, "Output file, or - for stdout (default: MODEL.converted.onnx)");
  args->external.add(convert);
  convert->footer("\nExamples:\n  graphrw convert big.onnx --external-data big.data -o big.split.onnx\n"
                  "  graphrw convert big.split.onnx --embed-external-data -o big.onnx\n  graphrw convert - -o model.onnx < model.onnx\n");
  return {convert, [args] {
            std::string out = outputPath(args->input, args->output, "converted");
            WriteOptions writeOptions = args->external.writeOptions();
            if (args->input != "-") writeOptions.protect.push_back(args->input);
            auto model = loadModel(args->input);
            writeOut(*model, out, writeOptions);
            releaseAtExit(model);
            return 0;
          }};
}

Command addSchemaCommand(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  auto* schema = app.add_subcommand("schema", "Print the JSON Schema of rule files (draft 2020-12)");
  schema->add_flag("--markdown", *markdown, "Print each pass's options table instead (as docs/passes.md holds them)");
  schema->footer("\nExamples:\n  graphrw schema > graphrw-rules.schema.json\n  graphrw schema | jq '.properties.passes'\n"
                 "  graphrw schema --markdown\n");
  return {schema, [markdown] {
            if (*markdown) {
              for (const PassSpec* spec : registeredPasses()) std::cout << "## " << spec->name << "\n\n" << optionsMarkdown(*spec) << "\n";
              return 0;
            }
            std::cout << ruleFileSchema().dump(2) << "\n";
            return 0;
          }};
}

namespace {

struct CompareArgs {
  std::string a, b;
  std::vector<std::string> inputs, dims;
  std::string valRange;
  CompareOptions options;
  bool json = false;
};

// --dim NAME=N and --val-range LO,HI, checked strictly.
void parseCompareShapes(CompareArgs& args) {
  for (const auto& text : args.dims) {
    auto eq = text.find('=');
    std::string name = text.substr(0, eq), digits = eq == std::string::npos ? "" : text.substr(eq + 1);
    int64_t n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (name.empty() || digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || n < 1 ||
        n > (int64_t{1} << 31))
      usageError("--dim '" + text + "': expected NAME=N with N an integer from 1 to 2^31");
    if (!args.options.dims.emplace(name, n).second) usageError("--dim: '" + name + "' is given twice");
  }
  if (args.valRange.empty()) return;
  auto comma = args.valRange.find(',');
  char* end = nullptr;
  std::string lo = args.valRange.substr(0, comma), hi = comma == std::string::npos ? "" : args.valRange.substr(comma + 1);
  double l = std::strtod(lo.c_str(), &end);
  bool ok = !lo.empty() && *end == '\0';
  double h = std::strtod(hi.c_str(), &end);
  ok = ok && !hi.empty() && *end == '\0' && std::isfinite(l) && std::isfinite(h) && l < h;
  if (!ok) usageError("--val-range '" + args.valRange + "': expected LO,HI, finite numbers with LO < HI");
  args.options.valRange = {l, h};
}

int runCompare(CompareArgs& args) {
  parseCompareShapes(args);
  for (const auto& text : args.inputs) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      usageError("--input '" + text + "': expected NAME=FILE.npy");
    args.options.inputs[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (auto [flag, value] : {std::pair{"--rtol", args.options.rtol}, {"--atol", args.options.atol}})
    if (!std::isfinite(value) || value < 0)
      usageError(std::string(flag) + " must be a finite number >= 0, not " + (std::ostringstream() << value).str());
  auto a = loadModel(args.a);
  auto b = loadModel(args.b);
  for (const auto& [name, file] : args.options.inputs) {
    bool known = false;
    for (const auto& in : a->graph().inputs()) known |= in.value->name() == name && !in.value->isInitializer();
    if (!known) usageError("--input " + name + "=" + file + ": " + args.a + " has no input '" + name + "'");
  }
  for (const auto& [name, n] : args.options.dims) {
    bool known = false;
    for (const ir::Model* m : {a.get(), b.get()})
      for (const auto& in : m->graph().inputs())
        if (const onnx::TypeProto* t = in.value->type(); t && t->has_tensor_type())
          for (const auto& d : t->tensor_type().shape().dim()) known |= d.dim_param() == name;
    if (!known) usageError("--dim " + name + "=" + std::to_string(n) + ": no input of either model has a dimension '" + name + "'");
  }
  auto result = compareModels(*a, *b, args.options);
  if (args.json)
    std::cout << result.dump(2) << "\n";
  else
    std::cout << renderComparison(result, args.options);
  return result["ok"].get<bool>() ? 0 : static_cast<int>(ExitCode::Findings);
}

}  // namespace

Command addCompareCommand(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* compare = app.add_subcommand(
      "compare", "Run two models under ONNX Runtime on the same inputs and compare every output (ai.graphcore ops mapped back)");
  compare->add_option("a", args->a, "The model before (ONNX file)")->required();
  compare->add_option("b", args->b, "The model after (ONNX file)")->required();
  compare->add_option("--input", args->inputs, "NAME=FILE.npy: this input's data (others: random of the declared shape); repeatable");
  compare->add_option("--rtol", args->options.rtol, "Relative tolerance: |a - b| <= atol + rtol * |b|")->capture_default_str();
  compare->add_option("--atol", args->options.atol, "Absolute tolerance")->capture_default_str();
  compare->add_option("--seed", args->options.seed, "Seed of the random inputs")->capture_default_str();
  compare->add_option("--int-max", args->options.intMax, "Random integer inputs are drawn from [0, N)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  compare->add_option("--dim", args->dims, "NAME=N: a symbolic input dimension's size (others: 1, or the other model's); repeatable");
  compare->add_option("--val-range", args->valRange, "LO,HI: random floating-point inputs are drawn from [LO, HI) (default -1,1)");
  compare->add_flag("--equal-nan", args->options.equalNan, "NaN in both outputs at the same place agrees (numpy's equal_nan)");
  compare->add_flag("--json", args->json, "Print JSON");
  compare->footer("\nExamples:\n  graphrw compare model.onnx model.ipu.onnx\n"
                  "  graphrw compare model.onnx model.ipu.onnx --input input_ids=ids.npy --rtol 1e-3\n"
                  "  graphrw compare a.onnx b.onnx --json | jq '.outputs'\n"
                  "\nExit status: 0 when every output agrees within the tolerances, 1 when one does not.\n"
                  "Needs ONNX Runtime for Node.js (npm install --ignore-scripts onnxruntime-node@1.30.0; GRAPHRW_ORT_DIR).\n");
  return {compare, [args] { return runCompare(*args); }};
}

Command addValidateCommand(CLI::App& app) {
  struct Args {
    std::string input, target, popartVersion;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* validate = app.add_subcommand("validate", "ONNX checker, strict shape inference, IR verifier, PopART attribute types");
  validate->add_option("model", args->input, "ONNX model, or - for stdin")->required();
  validate->add_flag("--json", args->json, "Print JSON");
  validate->add_option("--target", args->target, "Also check what this target's import refuses (popart)")
      ->check(CLI::IsMember({"popart"}));
  validate
      ->add_option("--popart-version", args->popartVersion,
                   "With --target popart: the PopART release X.Y to check for (default: the newest graphrw knows, " +
                       newestPopart().str() + "); ai.graphcore ops newer than it are findings")
      ->check([](const std::string& v) {
        return parsePopartVersion(v) ? std::string() : "not a version X.Y (such as 3.2): '" + v + "'";
      });
  validate->footer("\nExamples:\n  graphrw validate model.onnx\n  graphrw validate --target popart model.ipu.onnx\n"
                   "  graphrw validate --json model.onnx | jq '.findings'\n");
  return {validate, [args] {
            if (!args->popartVersion.empty() && args->target != "popart")
              usageError("validate: --popart-version needs --target popart");
            auto model = loadModel(args->input);
            auto findings = validateModel(*model);
            PopartVersion version = args->popartVersion.empty() ? newestPopart() : *parsePopartVersion(args->popartVersion);
            if (args->target == "popart")
              for (auto& f : popart::checkImport(*model, version)) findings.push_back({"popart:" + f.check, f.where, f.message});
            if (args->json) {
              nlohmann::json j;
              if (!args->target.empty()) j["target"] = args->target;
              if (args->target == "popart") j["popart_version"] = version.str();
              j["valid"] = findings.empty();
              j["findings"] = nlohmann::json::array();
              for (const auto& f : findings)
                j["findings"].push_back({{"check", f.check}, {"where", f.where}, {"message", f.message}});
              std::cout << j.dump(2) << "\n";
            } else {
              for (const auto& f : findings) {
                std::string msg = f.message;
                std::replace(msg.begin(), msg.end(), '\n', ' ');  // ONNX's multi-line messages: one finding, one line
                std::cout << f.check << ": " << escapeControl(f.where) << ": " << escapeControl(msg) << "\n";
              }
              if (findings.empty()) std::cout << args->input << ": valid\n";
            }
            releaseAtExit(model);
            return findings.empty() ? 0 : static_cast<int>(ExitCode::Findings);
          }};
}

}  // namespace graphrw::cli
