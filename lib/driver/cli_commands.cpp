// The commands that are not passes: inspect, convert, schema, compare and
// validate. Each declares its subcommand and returns what runs when it was
// parsed (cli_common.h's Command); cli.cpp parses and dispatches.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>
#include <utility>

#include "driver/cli_common.h"
#include "driver/compare.h"
#include "driver/inspect.h"
#include "driver/rules.h"
#include "driver/validate.h"
#include "io/loader.h"
#include "support/error.h"
#include "support/json_text.h"
#include "target/popart/check.h"
#include "target/popart/graphcore_ops.h"
#include "target/popart/session.h"
#include "target/popart/stage_cost.h"

namespace graphrw::cli {

Command addInspectCommand(CLI::App& app) {
  struct Args {
    std::string input, optimizer = "none", ipuMemory, svg, costs;
    int64_t batch = 0;
    bool json = false, stages = false;
  };
  auto args = std::make_shared<Args>();
  auto* inspect =
      app.add_subcommand("inspect", "Summarise a model: opsets, ops, functions, weights, PopART attributes");
  inspect->add_option("model", args->input, "ONNX model, or - for stdin")->required();
  inspect->add_flag("--json", args->json, "Print JSON");
  inspect->add_flag(
      "--stages", args->stages,
      "Print the cost of each pipeline stage and IPU instead: weights, optimizer state, activations, FLOPs "
      "(docs/popart.md, \"Stage costs\")");
  inspect
      ->add_option("--optimizer", args->optimizer, "With --stages: training with this optimizer, or none (inference)")
      ->check(CLI::IsMember({"none", "sgd", "momentum", "adam", "lamb"}))
      ->default_str("none");
  inspect->add_option("--ipu-memory", args->ipuMemory,
                      "With --stages: memory per IPU (900MiB, 1.5GB, bytes); says which IPUs do not fit");
  inspect->add_option("--batch", args->batch, "With --stages: the micro-batch size to cost (default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  inspect->add_option(
      "--costs", args->costs,
      "With --stages: a calibration of the cost model, a JSON file (docs/popart.md, \"Calibrating the cost model\")");
  inspect->add_option("--svg", args->svg,
                      "With --stages: also draw them into FILE (SVG): memory bars against the IPU's, FLOPs, layers");
  inspect->footer(
      "\nExamples:\n  graphrw inspect model.onnx\n  graphrw inspect --json model.onnx | jq '.ops'\n"
      "  graphrw expand model.onnx -o - | graphrw inspect -\n"
      "  graphrw inspect --stages --optimizer adam --ipu-memory 900MiB placed.onnx --svg stages.svg\n"
      "  graphrw inspect --stages --batch 8 --costs calibration.json placed.onnx\n");
  return {inspect, [args] {
            if (!args->stages && (args->optimizer != "none" || !args->ipuMemory.empty() || !args->svg.empty() ||
                                  args->batch || !args->costs.empty()))
              usageError("inspect: --optimizer, --ipu-memory, --batch, --costs and --svg go with --stages");
            stage_cost::Options costOptions;
            costOptions.optimizer = *stage_cost::parseOptimizer(args->optimizer);
            if (!args->ipuMemory.empty())
              costOptions.ipuMemory = stage_cost::parseBytes(args->ipuMemory, "--ipu-memory");
            if (args->batch) costOptions.batch = args->batch;
            if (!args->costs.empty()) costOptions.calibration = stage_cost::loadCalibration(args->costs, "--costs");
            auto model = loadModel(args->input);
            if (args->stages) {
              auto costs = stage_cost::stageCosts(*model, costOptions);
              if (!args->svg.empty()) writeText(args->svg, stage_cost::stageCostsSvg(costs));
              std::cout << (args->json ? costs.dump(2) + "\n" : stage_cost::renderStageCosts(costs));
              releaseAtExit(model);
              return 0;
            }
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
  convert->footer(
      "\nExamples:\n  graphrw convert big.onnx --external-data big.data -o big.split.onnx\n"
      "  graphrw convert big.split.onnx --embed-external-data -o big.onnx\n  graphrw convert - -o model.onnx < "
      "model.onnx\n");
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
  schema->add_flag("--markdown", *markdown, "Print each pass's options table instead (as docs/passes/NAME.md has it)");
  schema->footer(
      "\nExamples:\n  graphrw schema > graphrw-rules.schema.json\n  graphrw schema | jq '.properties.passes'\n"
      "  graphrw schema --markdown\n");
  return {schema, [markdown] {
            if (*markdown) {
              for (const PassSpec* spec : registeredPasses())
                std::cout << "## " << spec->name << "\n\n" << optionsMarkdown(*spec) << "\n";
              return 0;
            }
            std::cout << ruleFileSchema().dump(2) << "\n";
            return 0;
          }};
}

namespace {

struct CompareArgs {
  std::string a, b;
  std::vector<std::string> inputs, dims, valRanges;
  CompareOptions options;
  bool json = false;
};

// "LO,HI" or "[LO,HI]": finite numbers with LO < HI.
std::optional<std::pair<double, double>> parseRange(std::string text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  auto comma = text.find(',');
  if (comma == std::string::npos) return std::nullopt;
  std::string lo = text.substr(0, comma), hi = text.substr(comma + 1);
  char* end = nullptr;
  double l = std::strtod(lo.c_str(), &end);
  bool ok = !lo.empty() && *end == '\0';
  double h = std::strtod(hi.c_str(), &end);
  ok = ok && !hi.empty() && *end == '\0' && std::isfinite(l) && std::isfinite(h) && l < h;
  return ok ? std::optional(std::pair{l, h}) : std::nullopt;
}

// "D,D,..." or "[D,D,...]" ("[]": a scalar), each D an integer from 0 to 2^31.
std::optional<std::vector<int64_t>> parseShape(std::string text) {
  bool bracketed = text.size() >= 2 && text.front() == '[' && text.back() == ']';
  if (bracketed) text = text.substr(1, text.size() - 2);
  std::vector<int64_t> dims;
  if (text.empty()) return bracketed ? std::optional(dims) : std::nullopt;
  for (size_t start = 0; start <= text.size();) {
    size_t comma = std::min(text.find(',', start), text.size());
    int64_t d = 0;
    auto [end, ec] = std::from_chars(text.data() + start, text.data() + comma, d);
    if (comma == start || ec != std::errc() || end != text.data() + comma || d < 0 || d > (int64_t{1} << 31))
      return std::nullopt;
    dims.push_back(d);
    start = comma + 1;
  }
  return dims;
}

// --dim NAME=N, --input NAME=FILE|SHAPE and --val-range [NAME=]LO,HI, checked strictly.
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
  for (const auto& text : args.inputs) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      usageError("--input '" + text + "': expected NAME=FILE.npy or NAME=D,D,... (a shape)");
    std::string name = text.substr(0, eq), value = text.substr(eq + 1);
    if (args.options.inputs.count(name) || args.options.shapes.count(name))
      usageError("--input: '" + name + "' is given twice");
    if (auto shape = parseShape(value))
      args.options.shapes[name] = *shape;
    else if (value.find_first_not_of("0123456789,[]-") == std::string::npos)
      usageError("--input '" + text + "': a shape is D,D,... with each D an integer from 0 to 2^31");
    else
      args.options.inputs[name] = value;
  }
  bool defaultGiven = false;
  for (const auto& text : args.valRanges) {
    auto eq = text.find('=');
    std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
    auto range = parseRange(eq == std::string::npos ? text : text.substr(eq + 1));
    if (!range || (eq != std::string::npos && name.empty()))
      usageError("--val-range '" + text + "': expected [NAME=]LO,HI, finite numbers with LO < HI");
    if (name.empty() ? std::exchange(defaultGiven, true) : !args.options.valRanges.emplace(name, *range).second)
      usageError("--val-range: " + (name.empty() ? std::string("the default range") : "'" + name + "'") +
                 " is given twice");
    if (name.empty()) args.options.valRange = *range;
  }
}

// Every input named by --input, --val-range and --dim exists; a --input shape has
// the input's rank and agrees with its fixed dimensions.
void checkCompareNames(const CompareArgs& args, const ir::Model& a, const ir::Model& b) {
  auto input = [&](const std::string& name) -> const ir::Value* {
    for (const auto& in : a.graph().inputs())
      if (in.value->name() == name && !in.value->isInitializer()) return in.value;
    return nullptr;
  };
  for (const auto& [name, file] : args.options.inputs)
    if (!input(name)) usageError("--input " + name + "=" + file + ": " + args.a + " has no input '" + name + "'");
  for (const auto& [name, range] : args.options.valRanges)
    if (!input(name)) usageError("--val-range " + name + "=...: " + args.a + " has no input '" + name + "'");
  for (const auto& [name, dims] : args.options.shapes) {
    const ir::Value* v = input(name);
    if (!v) usageError("--input " + name + "=...: " + args.a + " has no input '" + name + "'");
    const onnx::TypeProto* t = v->type();
    if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) continue;
    const auto& declared = t->tensor_type().shape();
    if (declared.dim_size() != static_cast<int>(dims.size()))
      usageError("--input " + name + ": " + std::to_string(dims.size()) + " dimensions given, the input has " +
                 std::to_string(declared.dim_size()));
    for (int i = 0; i < declared.dim_size(); ++i)
      if (declared.dim(i).has_dim_value() && declared.dim(i).dim_value() != dims[i])
        usageError("--input " + name + ": dimension " + std::to_string(i) + " is fixed at " +
                   std::to_string(declared.dim(i).dim_value()) + ", not " + std::to_string(dims[i]));
  }
  for (const auto& [name, n] : args.options.dims) {
    bool known = false;
    for (const ir::Model* m : {&a, &b})
      for (const auto& in : m->graph().inputs())
        if (const onnx::TypeProto* t = in.value->type(); t && t->has_tensor_type())
          for (const auto& d : t->tensor_type().shape().dim()) known |= d.dim_param() == name;
    if (!known)
      usageError("--dim " + name + "=" + std::to_string(n) + ": no input of either model has a dimension '" + name +
                 "'");
  }
}

int runCompare(CompareArgs& args) {
  parseCompareShapes(args);
  for (auto [flag, value] : {std::pair{"--rtol", args.options.rtol}, {"--atol", args.options.atol}})
    if (!std::isfinite(value) || value < 0)
      usageError(std::string(flag) + " must be a finite number >= 0, not " + (std::ostringstream() << value).str());
  CompareModel a{args.a, loadModel(args.a)}, b{args.b, loadModel(args.b)};
  checkCompareNames(args, *a.model, *b.model);
  auto result = compareModels(std::move(a), std::move(b), args.options);
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
      "compare",
      "Run two models under ONNX Runtime on the same inputs and compare every output (ai.graphcore ops mapped back)");
  compare->add_option("a", args->a, "The model before (ONNX file)")->required();
  compare->add_option("b", args->b, "The model after (ONNX file)")->required();
  compare->add_option(
      "--input", args->inputs,
      "NAME=FILE.npy: this input's data; NAME=D,D,...: the shape of its random data (others: random of the "
      "declared shape); repeatable");
  compare->add_option("--rtol", args->options.rtol, "Relative tolerance: |a - b| <= atol + rtol * |b|")
      ->capture_default_str();
  compare->add_option("--atol", args->options.atol, "Absolute tolerance")->capture_default_str();
  compare->add_option("--seed", args->options.seed, "Seed of the random inputs")->capture_default_str();
  compare->add_option("--int-max", args->options.intMax, "Random integer inputs are drawn from [0, N)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  compare->add_option("--dim", args->dims,
                      "NAME=N: a symbolic input dimension's size (others: 1, or the other model's); repeatable");
  compare->add_option(
      "--val-range", args->valRanges,
      "[NAME=]LO,HI: random floating-point inputs (or input NAME) are drawn from [LO, HI) (default -1,1); "
      "repeatable");
  compare->add_flag("--equal-nan", args->options.equalNan,
                    "NaN in both outputs at the same place agrees (numpy's equal_nan)");
  compare->add_flag("--json", args->json, "Print JSON");
  compare->footer(
      "\nExamples:\n  graphrw compare model.onnx model.ipu.onnx\n"
      "  graphrw compare model.onnx model.ipu.onnx --input input_ids=ids.npy --rtol 1e-3\n"
      "  graphrw compare bert.onnx bert.ipu.onnx --dim batch=2 --dim sequence=128 --val-range mask=0,1\n"
      "  graphrw compare a.onnx b.onnx --input x=1,3,224,224\n"
      "  graphrw compare a.onnx b.onnx --json | jq '.outputs'\n"
      "\nExit status: 0 when every output agrees within the tolerances, 1 when one does not.\n"
      "Needs ONNX Runtime for Node.js (npm install --ignore-scripts onnxruntime-node@1.30.0; GRAPHRW_ORT_DIR).\n");
  return {compare, [args] { return runCompare(*args); }};
}

Command addValidateCommand(CLI::App& app) {
  struct Args {
    std::string input, target, popartVersion, mode;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* validate =
      app.add_subcommand("validate", "ONNX checker, strict shape inference, IR verifier, PopART attribute types");
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
  validate
      ->add_option("--mode", args->mode,
                   "With --target popart: the session the model is for; training adds what a training session "
                   "refuses (integer initializers, which it would make Variables)")
      ->check(CLI::IsMember({"training", "inference"}));
  validate->footer(
      "\nExamples:\n  graphrw validate model.onnx\n  graphrw validate --target popart model.ipu.onnx\n"
      "  graphrw validate --json model.onnx | jq '.findings'\n");
  return {validate, [args] {
            if (!args->popartVersion.empty() && args->target != "popart")
              usageError("validate: --popart-version needs --target popart");
            if (!args->mode.empty() && args->target != "popart") usageError("validate: --mode needs --target popart");
            auto model = loadModel(args->input);
            auto findings = validateModel(*model);
            PopartVersion version =
                args->popartVersion.empty() ? newestPopart() : *parsePopartVersion(args->popartVersion);
            if (args->target == "popart")
              for (auto& f : popart::checkImport(*model, version))
                findings.push_back({"popart:" + f.check, f.where, f.message});
            if (args->target == "popart")
              for (auto& f : popart::checkSession(*model, {args->mode == "training"}))
                findings.push_back({"popart:" + f.check, f.where, f.message});
            if (args->json) {
              nlohmann::json j;
              if (!args->target.empty()) j["target"] = args->target;
              if (args->target == "popart") j["popart_version"] = version.str();
              if (!args->mode.empty()) j["mode"] = args->mode;
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
