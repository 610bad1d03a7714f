#include "cli.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>

#include "atomic_file.h"
#include "batch.h"
#include "cli_common.h"
#include "compare.h"
#include "completion.h"
#include "console.h"
#include "error.h"
#include "graphcore_ops.h"
#include "inspect.h"
#include "json_text.h"
#include "loader.h"
#include "rules.h"
#include "validate.h"
#include "popart_check.h"

namespace fs = std::filesystem;

namespace graphrw::cli {
namespace {

std::string unknownCommand(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  std::string msg = "unknown command '" + word + "'";
  if (auto near = didYouMean(word, names)) msg += " (did you mean '" + *near + "'?)";
  return msg + "; see graphrw --help";
}

// CLI11's message, with a did-you-mean for a mistyped command or flag and a
// pointer to the help of the command it was for.
std::string explainParseError(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  // The command word: the first argument that is not an option.
  const CLI::App* command = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == word) command = sub;
    if (!command) return unknownCommand(app, word);
    break;
  }
  std::string msg = e.what();
  if (command) {
    std::vector<std::string> flags;
    for (const CLI::Option* o : command->get_options())
      for (const auto& name : o->get_lnames()) flags.push_back("--" + name);
    for (const CLI::Option* o : app.get_options())
      for (const auto& name : o->get_lnames()) flags.push_back("--" + name);
    for (int i = 1; i < argc; ++i) {
      std::string word = argv[i];
      if (!word.starts_with("--")) continue;
      word = word.substr(0, word.find('='));
      if (std::find(flags.begin(), flags.end(), word) != flags.end()) continue;
      if (auto near = didYouMean(word, flags)) msg += " (did you mean '" + *near + "' for '" + word + "'?)";
    }
  }
  return msg + " (see graphrw " + (command ? command->get_name() + " " : std::string()) + "--help)";
}

}  // namespace

std::string outputPath(const std::string& input, const std::string& requested, const std::string& what) {
  if (!requested.empty()) {
    if (requested != "-" && input != "-") {
      std::error_code ec;
      if (fs::equivalent(input, requested, ec))
        usageError("refusing to overwrite the input model '" + input + "'; choose another -o");
    }
    if (requested != "-") checkOutputPath(requested);
    return requested;
  }
  if (input == "-") return "-";
  fs::path in(input);
  fs::path ext = in.extension();
  fs::path out = in.parent_path() / (in.stem().string() + "." + what + (ext.empty() ? ".onnx" : ext.string()));
  checkOutputPath(out);
  return out.string();
}

void ExternalOptions::add(CLI::App* cmd) {
    cmd->add_option("--external-data", file,
                    "Store tensors of at least --size-threshold bytes in this file, beside the output");
    cmd->add_option("--size-threshold", threshold, "Smallest tensor (bytes) moved by --external-data")
        ->capture_default_str();
    cmd->add_flag("--embed-external-data", embed, "Write every tensor into the model itself")->excludes("--external-data");
}

WriteOptions ExternalOptions::writeOptions() const {
  WriteOptions o;
  if (embed) o.external = ExternalMode::Embed;
  else if (!file.empty()) o.external = ExternalMode::Move;
  o.externalFile = file;
  o.threshold = threshold;
  return o;
}

void PipelineFlags::add(CLI::App* cmd) {
    cmd->add_option("--report", report, "Write a JSON report of what each pass did (- for stdout when -o is a file)");
    cmd->add_flag("--verify-each", verifyEach, "Run the IR verifier after every pass");
    cmd->add_flag("--dry-run", dryRun, "Run the passes and report what they would change; write nothing");
    cmd->add_option("--print-ir-after", printIrAfter, "Print the IR as ONNX text to stderr after this pass (name, index or all)");
    cmd->add_option("--stop-after", stopAfter, "Run only the first N passes (for bisecting)")->check(CLI::PositiveNumber);
}

PipelineOptions PipelineFlags::options() const {
  PipelineOptions o;
  o.verifyEach = verifyEach;
  if (stopAfter > 0) o.stopAfter = stopAfter;
  o.printIrAfter = printIrAfter;
  return o;
}

void writeText(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    return;
  }
  AtomicFile out(path);
  writeAll(out.fd(), text.data(), text.size(), path);
  out.commit();
}

namespace {

void writeReport(const PipelineFlags& flags, const std::string& input, const std::string& output,
                 const nlohmann::json& passes) {
  if (flags.report.empty()) return;
  nlohmann::json report = {{"model", input}, {"output", output}, {"passes", passes}};
  writeText(flags.report, report.dump(2) + "\n");
}

// The process ends right after a command: freeing a large IR node by node only
// costs time (a fifth of expanding a 2M-node model), so it is left to the OS;
// under the sanitizers it is freed, so that LeakSanitizer reports only real leaks.
void releaseAtExit(std::unique_ptr<ir::Model>& model) {
#ifdef GRAPHRW_SANITIZE
  model.reset();
#else
  (void)model.release();
#endif
}

void writeOut(ir::Model& model, const std::string& path, const WriteOptions& options) {
  auto result = writeModel(model, path, options);
  if (path != "-") spdlog::info("wrote {} ({} bytes)", path, result.modelBytes);
  for (const auto& f : result.dataFiles) spdlog::info("wrote {} ({} bytes of external data)", f, result.externalBytes);
}

}  // namespace

int runPipeline(const std::string& input, const std::string& out, std::vector<std::shared_ptr<const Pass>> passes,
                const PipelineFlags& flags, const ExternalOptions& external) {
  // Every usage conflict before the input is read or an output touched.
  if (!flags.dryRun && flags.report == "-" && out == "-")
    usageError("--report - needs the model written to a file with -o (or --dry-run)");
  if (!flags.report.empty() && flags.report != "-") {
    checkOutputPath(flags.report);
    std::error_code ec;
    if ((out != "-" && fs::equivalent(flags.report, out, ec)) || (input != "-" && fs::equivalent(flags.report, input, ec)))
      usageError("--report " + flags.report + " would overwrite a model; choose another file");
  }
  WriteOptions writeOptions = external.writeOptions();
  if (input != "-") writeOptions.protect.push_back(input);
  auto model = loadModel(input);
  PassManager pm(flags.options());
  for (auto& p : passes) pm.add(std::move(p));
  auto report = pm.run(*model);
  if (flags.dryRun) {
    // Nothing is written: the report is the result (stdout unless --report names a file).
    PipelineFlags reportOnly = flags;
    if (reportOnly.report.empty()) reportOnly.report = "-";
    writeReport(reportOnly, input, "", report);
    releaseAtExit(model);
    return 0;
  }
  writeOut(*model, out, writeOptions);
  writeReport(flags, input, out, report);
  releaseAtExit(model);
  return 0;
}

namespace {

// graphrw run RULES MODEL... --out-dir DIR: every model through the same rules,
// each output named as its input; one bad model does not stop the others.
int runBatchCommand(const std::string& rulesPath, const std::vector<std::string>& models, const std::string& outDir,
                    size_t jobs, const std::string& shardText, const PipelineFlags& given,
                    const ExternalOptions& external) {
  PipelineFlags flags = given;
  if (flags.dryRun && flags.report.empty()) flags.report = "-";  // a dry run's result is its report
  // Parsed once, every rule error before any model is read; the passes are
  // immutable and shared by every model.
  const RuleFile rules = loadRules(rulesPath);
  if (outDir.empty()) usageError("several models need --out-dir DIR (outputs keep their input's file name)");
  std::error_code ec;
  if (fs::exists(outDir, ec) && !fs::is_directory(outDir, ec)) usageError("--out-dir '" + outDir + "' is not a folder");
  // Collisions over all inputs, before sharding: every shard of one list agrees.
  std::set<std::string> names;
  std::vector<std::string> all = shardInputs(models, Shard{});
  for (const auto& input : all) {
    if (input == "-") usageError("standard input cannot be one of several models");
    if (!names.insert(fs::path(input).filename().string()).second)
      usageError("two inputs are named '" + fs::path(input).filename().string() + "': their outputs would collide in --out-dir");
    if (fs::equivalent(input, fs::path(outDir) / fs::path(input).filename(), ec))
      usageError("refusing to overwrite the input '" + input + "'; choose another --out-dir");
  }
  std::vector<std::string> inputs = shardInputs(models, shardText.empty() ? Shard{} : Shard::parse(shardText));
  std::vector<BatchItem> items;
  for (const auto& input : inputs) {
    BatchItem item;
    item.input = input;
    item.output = (fs::path(outDir) / fs::path(input).filename()).string();
    items.push_back(std::move(item));
  }
  WriteOptions writeOptions = external.writeOptions();
  writeOptions.protect.assign(all.begin(), all.end());
  std::once_flag madeOutDir;
  bool tty = isatty(STDERR_FILENO) && !flags.quiet;
  const auto start = std::chrono::steady_clock::now();
  std::mutex runningMutex;
  std::vector<std::string> running;  // models being converted, oldest first
  size_t doneSoFar = 0, failedSoFar = 0;
  // done/total, failures, ETA and the model started last, on one line.
  auto status = [&] {
    size_t width = 24, filled = width * doneSoFar / items.size();
    std::string line = "[" + std::string(filled, '=') + std::string(width - filled, ' ') + "] " +
                       std::to_string(doneSoFar) + "/" + std::to_string(items.size());
    if (failedSoFar) line += ", " + std::to_string(failedSoFar) + " failed";
    if (doneSoFar) {
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      auto left = static_cast<long>(elapsed / static_cast<double>(doneSoFar) * static_cast<double>(items.size() - doneSoFar) + 0.5);
      char eta[32];
      std::snprintf(eta, sizeof eta, ", %ld:%02ld left", left / 60, left % 60);
      line += eta;
    }
    if (!running.empty()) line += ": " + escapeControl(running.back());
    return line;
  };
  auto job = [&](BatchItem& item) {
    ModelLogScope scope(item.input);  // its log lines name the model
    if (tty) {
      std::lock_guard lock(runningMutex);
      running.push_back(item.input);
      setStatusLine(status());
    }
    struct Finish {  // counts the model's warnings however the job ends
      BatchItem& item;
      ModelLogScope& scope;
      ~Finish() { item.warnings = scope.warnings(); }
    } finish{item, scope};
    auto model = loadModel(item.input);
    PassManager pm(flags.options());
    for (const auto& p : rules.passes) pm.add(p);
    auto report = pm.run(*model);
    if (!flags.dryRun) {
      // The folder appears with the first model written, not before.
      std::call_once(madeOutDir, [&] {
        std::error_code e;
        fs::create_directories(outDir, e);
        if (!fs::is_directory(outDir)) fail(ExitCode::OutputFailed, "cannot create --out-dir '" + outDir + "'");
      });
      writeModel(*model, item.output, writeOptions);
    }
    if (!flags.report.empty()) item.report = std::move(report);
  };
  auto progress = [&](const BatchItem& item, size_t done, size_t failed) {
    if (tty) {
      std::lock_guard lock(runningMutex);
      std::erase(running, item.input);
      doneSoFar = done;
      failedSoFar = failed;
      if (!item.ok)
        printLine("graphrw: error: " +
                  escapeControl(item.error.starts_with(item.input) ? item.error : item.input + ": " + item.error));
      setStatusLine(done == items.size() ? std::string() : status());
    } else if (!flags.quiet) {
      std::string warned =
          item.warnings ? " (" + std::to_string(item.warnings) + " warning" + (item.warnings == 1 ? "" : "s") + ")" : "";
      printLine("graphrw: [" + std::to_string(done) + "/" + std::to_string(items.size()) + "] " +
                escapeControl(item.input) + ": " +
                (item.ok ? (flags.dryRun ? "checked (dry run)" : "converted") : "failed") + warned);
    }
  };
  runBatch(items, jobs, job, progress);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  size_t failed = 0, warnings = 0, warnedModels = 0;
  nlohmann::json reports = nlohmann::json::array();
  for (const auto& item : items) {
    if (!item.ok) ++failed;
    warnings += item.warnings;
    warnedModels += item.warnings > 0;
    reports.push_back({{"model", item.input},
                       {"output", item.ok && !flags.dryRun ? item.output : ""},
                       {"ok", item.ok},
                       {"error", item.error},
                       {"warnings", item.warnings},
                       {"passes", item.report}});
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", seconds);
  std::cerr << "graphrw: " << (flags.dryRun ? "checked " : "converted ") << items.size() - failed << ", failed " << failed
            << ", " << warnings << " warning" << (warnings == 1 ? "" : "s") << " in " << warnedModels << " model"
            << (warnedModels == 1 ? "" : "s") << ", " << took << " s\n";
  for (const auto& item : items)
    if (!item.ok)
      std::cerr << "graphrw:   " << escapeControl(item.error.starts_with(item.input) ? item.error : item.input + ": " + item.error)
                << "\n";
  nlohmann::json summary = {{"models", items.size()}, {"converted", items.size() - failed}, {"failed", failed},
                            {"warnings", warnings}, {"models_with_warnings", warnedModels}, {"seconds", seconds},
                            {"dry_run", flags.dryRun}};
  if (!flags.report.empty())
    writeText(flags.report, nlohmann::json{{"rules", rulesPath}, {"summary", summary}, {"models", reports}}.dump(2) + "\n");
  return failed ? static_cast<int>(ExitCode::BadInput) : 0;
}

// "rules/expand-bert.rules.json" -> "expand-bert"
std::string rulesTag(const std::string& rulesPath) {
  std::string name = fs::path(rulesPath).filename().string();
  for (std::string_view ext : {".json", ".rules"})
    if (name.size() > ext.size() && name.ends_with(ext)) name.resize(name.size() - ext.size());
  return name.empty() ? "rewritten" : name;
}

// The command line's declarations as completion data.
CompletionSpec completionSpec(const CLI::App& app) {
  auto optionsOf = [](const CLI::App& cmd) {
    std::vector<CompletionOption> out;
    for (const CLI::Option* o : cmd.get_options()) {
      if (!o->nonpositional()) continue;
      CompletionOption c;
      for (const auto& n : o->get_snames()) c.names.push_back("-" + n);
      for (const auto& n : o->get_lnames()) c.names.push_back("--" + n);
      c.help = o->get_description();
      c.takesValue = o->get_type_size() > 0;
      const std::string type = o->get_type_name();
      if (auto open = type.find('{'), close = type.rfind('}'); open != std::string::npos && close > open) {
        std::string list = type.substr(open + 1, close - open - 1), item;
        for (char ch : list + ",") {
          if (ch == ',') {
            if (!item.empty()) c.choices.push_back(item);
            item.clear();
          } else if (ch != ' ') {
            item += ch;
          }
        }
      }
      std::string lower = c.help;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
      c.file = c.takesValue && c.choices.empty() &&
               (lower.find("file") != std::string::npos || lower.find("folder") != std::string::npos);
      out.push_back(std::move(c));
    }
    return out;
  };
  CompletionSpec spec;
  spec.global = optionsOf(app);
  for (const CLI::App* sub : app.get_subcommands({})) {
    CompletionCommand c{sub->get_name(), sub->get_description(), optionsOf(*sub), false};
    for (const CLI::Option* o : sub->get_options()) c.filePositionals |= !o->nonpositional() && sub->get_name() != "help";
    spec.commands.push_back(std::move(c));
  }
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"graphrw: rewrite ONNX graphs for Graphcore IPUs and any ONNX backend"};
  app.name("graphrw");
  app.require_subcommand(1);
  app.fallthrough();  // -v / -q anywhere, after the subcommand too (subcommands inherit this)
  app.set_version_flag("--version", std::string("graphrw ") + GRAPHRW_VERSION);
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More logging on stderr (-vv for trace)");
  app.add_flag("-q,--quiet", quiet, "Only errors on stderr");

  std::string input, output;
  bool json = false;

  auto* inspect = app.add_subcommand("inspect", "Summarise a model: opsets, ops, functions, weights, PopART attributes");
  inspect->add_option("model", input, "ONNX model, or - for stdin")->required();
  inspect->add_flag("--json", json, "Print JSON");
  inspect->footer("\nExamples:\n  graphrw inspect model.onnx\n  graphrw inspect --json model.onnx | jq '.ops'\n"
                  "  graphrw expand model.onnx -o - | graphrw inspect -\n");

  ExternalOptions external;
  auto* convert = app.add_subcommand("convert", "Load and write a model again (external data conversion)");
  convert->add_option("model", input, "ONNX model, or - for stdin")->required();
  convert->add_option("-o,--output", output, "Output file, or - for stdout (default: MODEL.converted.onnx)");
  external.add(convert);
  convert->footer("\nExamples:\n  graphrw convert big.onnx --external-data big.data -o big.split.onnx\n"
                  "  graphrw convert big.split.onnx --embed-external-data -o big.onnx\n  graphrw convert - -o model.onnx < model.onnx\n");

  // One subcommand per registered pass (passes/), generated from its declaration.
  PassCommands passCommands(app);

  std::string rulesPath, outDir, shard;
  std::vector<std::string> runModels;
  size_t jobs = 1;
  PipelineFlags runFlags;
  ExternalOptions runExternal;
  auto* run = app.add_subcommand("run", "Run the passes of a rule file (docs/rules.md) on one model or many");
  run->add_option("rules", rulesPath, "Rule file (JSON; graphrw schema prints its schema)")->required();
  run->add_option("models", runModels, "ONNX model(s); - for stdin (one model only)")->required();
  run->add_option("-o,--output", output, "Output file, or - for stdout (one model; default: MODEL.RULES.onnx)");
  run->add_option("--out-dir", outDir, "Folder for the outputs of several models (each keeps its input's name)");
  run->add_option("-j,--jobs", jobs, "Models converted at once")->capture_default_str()->check(CLI::Range(1, 256));
  run->add_option("--shard", shard, "Take share I of N (0 <= I < N) of the sorted inputs");
  runFlags.add(run);
  runExternal.add(run);
  run->footer("\nExamples:\n  graphrw run examples/popart.rules.json model.onnx -o model.ipu.onnx\n"
              "  graphrw run rules.json models/*.onnx --out-dir converted -j 2 --report report.json\n"
              "  graphrw run rules.json model.onnx --dry-run\n");

  auto* schema = app.add_subcommand("schema", "Print the JSON Schema of rule files (draft 2020-12)");
  schema->footer("\nExamples:\n  graphrw schema > graphrw-rules.schema.json\n  graphrw schema | jq '.properties.passes'\n");

  std::string helpTopic;
  auto* help = app.add_subcommand("help", "Show the help of graphrw or of one command: graphrw help [COMMAND]");
  help->add_option("command", helpTopic, "A command");
  help->footer("\nExamples:\n  graphrw help\n  graphrw help outline\n");

  std::string modelB;
  std::vector<std::string> compareInputs;
  CompareOptions compareOptions;
  auto* compare = app.add_subcommand(
      "compare", "Run two models under ONNX Runtime on the same inputs and compare every output (ai.graphcore ops mapped back)");
  compare->add_option("a", input, "The model before (ONNX file)")->required();
  compare->add_option("b", modelB, "The model after (ONNX file)")->required();
  compare->add_option("--input", compareInputs, "NAME=FILE.npy: this input's data (others: random of the declared shape); repeatable");
  compare->add_option("--rtol", compareOptions.rtol, "Relative tolerance: |a - b| <= atol + rtol * |b|")->capture_default_str();
  compare->add_option("--atol", compareOptions.atol, "Absolute tolerance")->capture_default_str();
  compare->add_option("--seed", compareOptions.seed, "Seed of the random inputs")->capture_default_str();
  compare->add_option("--int-max", compareOptions.intMax, "Random integer inputs are drawn from [0, N)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 30));
  compare->add_flag("--json", json, "Print JSON");
  compare->footer("\nExamples:\n  graphrw compare model.onnx model.ipu.onnx\n"
                  "  graphrw compare model.onnx model.ipu.onnx --input input_ids=ids.npy --rtol 1e-3\n"
                  "  graphrw compare a.onnx b.onnx --json | jq '.outputs'\n"
                  "\nExit status: 0 when every output agrees within the tolerances, 1 when one does not.\n"
                  "Needs ONNX Runtime for Node.js (npm install --ignore-scripts onnxruntime-node@1.30.0; GRAPHRW_ORT_DIR).\n");

  std::string shell;
  auto* completion = app.add_subcommand("completion", "Print a shell completion script: graphrw completion bash|zsh");
  completion->add_option("shell", shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  completion->footer("\nExamples:\n  source <(graphrw completion bash)\n"
                     "  graphrw completion zsh > ~/.zfunc/_graphrw   # a folder in $fpath\n");

  std::string target;
  auto* validate = app.add_subcommand("validate", "ONNX checker, strict shape inference, IR verifier, PopART attribute types");
  validate->add_option("model", input, "ONNX model, or - for stdin")->required();
  validate->add_flag("--json", json, "Print JSON");
  validate->add_option("--target", target, "Also check what this target's import refuses (popart)")
      ->check(CLI::IsMember({"popart"}));
  validate->footer("\nExamples:\n  graphrw validate model.onnx\n  graphrw validate --target popart model.ipu.onnx\n"
                   "  graphrw validate --json model.onnx | jq '.findings'\n");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "graphrw: error: " << escapeControl(explainParseError(app, e, argc, argv)) << "\n";
    return static_cast<int>(ExitCode::Usage);
  }
  if (help->parsed()) {
    if (helpTopic.empty()) {
      // The top-level help itself (app.help() would show the parsed `help` subcommand's).
      std::cout << app.get_formatter()->make_help(&app, "graphrw", CLI::AppFormatMode::Normal);
      return 0;
    }
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == helpTopic) {
        std::cout << sub->help();
        return 0;
      }
    std::cerr << "graphrw: error: " << escapeControl(unknownCommand(app, helpTopic)) << "\n";
    return static_cast<int>(ExitCode::Usage);
  }
  if (completion->parsed()) {
    auto spec = completionSpec(app);
    std::cout << (shell == "bash" ? bashCompletion(spec) : zshCompletion(spec));
    return 0;
  }
  setupLogging(verbosity, quiet);
  registerGraphcoreOps();

  try {
    if (auto status = passCommands.runParsed()) return *status;
    if (inspect->parsed()) {
      auto model = loadModel(input);
      auto summary = inspectModel(*model);
      if (json) std::cout << summary.dump(2) << "\n";
      else std::cout << renderInspection(summary);
      releaseAtExit(model);
      return 0;
    }
    if (convert->parsed()) {
      std::string out = outputPath(input, output, "converted");
      WriteOptions writeOptions = external.writeOptions();
      if (input != "-") writeOptions.protect.push_back(input);
      auto model = loadModel(input);
      writeOut(*model, out, writeOptions);
      releaseAtExit(model);
      return 0;
    }
    if (run->parsed() && (runModels.size() > 1 || !outDir.empty() || !shard.empty())) {
      if (!output.empty()) usageError("-o is for one model; several models go to --out-dir");
      runFlags.quiet = quiet;
      return runBatchCommand(rulesPath, runModels, outDir, jobs, shard, runFlags, runExternal);
    }
    if (run->parsed()) {
      input = runModels.front();
      RuleFile rules = loadRules(rulesPath);  // every error before the model is even read
      std::string out = outputPath(input, output, rulesTag(rulesPath));
      return runPipeline(input, out, std::move(rules.passes), runFlags, runExternal);
    }
    if (compare->parsed()) {
      for (const auto& text : compareInputs) {
        auto eq = text.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
          usageError("--input '" + text + "': expected NAME=FILE.npy");
        compareOptions.inputs[text.substr(0, eq)] = text.substr(eq + 1);
      }
      if (compareOptions.rtol < 0 || compareOptions.atol < 0) usageError("--rtol and --atol cannot be negative");
      auto a = loadModel(input);
      auto b = loadModel(modelB);
      for (const auto& [name, file] : compareOptions.inputs) {
        bool known = false;
        for (const auto& in : a->graph().inputs()) known |= in.value->name() == name && !in.value->isInitializer();
        if (!known) usageError("--input " + name + "=" + file + ": " + input + " has no input '" + name + "'");
      }
      auto result = compareModels(*a, *b, compareOptions);
      if (json) std::cout << result.dump(2) << "\n";
      else std::cout << renderComparison(result, compareOptions);
      return result["ok"].get<bool>() ? 0 : static_cast<int>(ExitCode::Findings);
    }
    if (schema->parsed()) {
      std::cout << ruleFileSchema().dump(2) << "\n";
      return 0;
    }
    if (validate->parsed()) {
      auto model = loadModel(input);
      auto findings = validateModel(*model);
      if (target == "popart")
        for (auto& f : popart::checkImport(*model)) findings.push_back({"popart:" + f.check, f.where, f.message});
      if (json) {
        nlohmann::json j;
        if (!target.empty()) j["target"] = target;
        j["valid"] = findings.empty();
        j["findings"] = nlohmann::json::array();
        for (const auto& f : findings) j["findings"].push_back({{"check", f.check}, {"where", f.where}, {"message", f.message}});
        std::cout << j.dump(2) << "\n";
      } else {
        for (const auto& f : findings) {
          std::string msg = f.message;
          std::replace(msg.begin(), msg.end(), '\n', ' ');  // ONNX's multi-line messages: one finding, one line
          std::cout << f.check << ": " << escapeControl(f.where) << ": " << escapeControl(msg) << "\n";
        }
        if (findings.empty()) std::cout << input << ": valid\n";
      }
      releaseAtExit(model);
      return findings.empty() ? 0 : static_cast<int>(ExitCode::Findings);
    }
  } catch (const Error& e) {
    std::cerr << "graphrw: error: " << escapeControl(e.what()) << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "graphrw: internal error: " << escapeControl(e.what()) << "\n";
    return static_cast<int>(ExitCode::Internal);
  }
  return static_cast<int>(ExitCode::Usage);
}

}  // namespace graphrw::cli
