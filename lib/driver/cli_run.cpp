// graphrw run RULES MODEL...: a rule file's passes on one model (the common
// pipeline) or on many (--out-dir, -j, --shard): one bad model does not stop
// the others, a status line on a terminal, a summary and a report at the end.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <set>

#include "driver/batch.h"
#include "driver/cli_common.h"
#include "driver/console.h"
#include "driver/rules.h"
#include "io/atomic_file.h"
#include "io/loader.h"
#include "support/error.h"
#include "support/json_text.h"
#include "support/text_file.h"

namespace fs = std::filesystem;

namespace graphrw::cli {
namespace {

struct RunArgs {
  std::string rules, output, outDir, shard;
  std::vector<std::string> models;
  size_t jobs = 1;
  PipelineFlags flags;
  ExternalOptions external;
};

// "rules/expand-bert.rules.json" -> "expand-bert"
std::string rulesTag(const std::string& rulesPath) {
  std::string file = fs::path(rulesPath).filename().string();
  std::string_view name = file;
  for (std::string_view ext : {".json", ".rules"})
    if (name.size() > ext.size() && name.ends_with(ext)) name.remove_suffix(ext.size());
  return name.empty() ? "rewritten" : std::string(name);
}

// Every input of the whole list (before sharding, so that every shard of one
// list agrees) is checked: no stdin, no two outputs of one name, no input
// overwritten. Returns the whole list, sorted.
std::vector<std::string> checkBatchInputs(const std::vector<std::string>& models, const std::string& outDir) {
  if (outDir.empty()) usageError("several models need --out-dir DIR (outputs keep their input's file name)");
  std::error_code ec;
  if (fs::exists(outDir, ec) && !fs::is_directory(outDir, ec)) usageError("--out-dir '" + outDir + "' is not a folder");
  std::set<std::string> names;
  std::vector<std::string> all = shardInputs(models, Shard{});
  for (const auto& input : all) {
    if (input == "-") usageError("standard input cannot be one of several models");
    std::string name = fs::path(input).filename().string();
    if (!names.insert(name).second)
      usageError("two inputs are named '" + name + "': their outputs would collide in --out-dir");
    if (fs::equivalent(input, fs::path(outDir) / name, ec))
      usageError("refusing to overwrite the input '" + input + "'; choose another --out-dir");
  }
  return all;
}

std::string errorLine(const std::string& model, const std::string& error) {
  return escapeControl(error.starts_with(model) ? error : model + ": " + error);
}

std::string errorLine(const BatchItem& item) { return errorLine(item.input, item.error); }

// A batch's summary on stderr from its report (a run's, or `report merge`'s):
// the counts line, the passes that changed nothing in some models, then each
// failure. `quiet`: the counts only when a model failed, no idle passes.
void printSummary(const nlohmann::json& report, const std::string& prefix, bool quiet) {
  const auto& s = report["summary"];
  auto count = [&](const char* key) { return s.value(key, size_t{0}); };
  size_t failed = count("failed"), warnings = count("warnings"), warned = count("models_with_warnings");
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", s.value("seconds", 0.0));
  if (!quiet || failed)
    std::cerr << "graphrw: " << prefix << (s.value("dry_run", false) ? "checked " : "converted ") << count("converted")
              << ", failed " << failed << ", " << warnings << " warning" << (warnings == 1 ? "" : "s") << " in "
              << warned << " model" << (warned == 1 ? "" : "s") << ", " << took << " s\n";
  std::string list;
  const nlohmann::json idle = s.value("unchanged_passes", nlohmann::json::object());
  for (const auto& [pass, n] : idle.items()) {
    auto models = n.get<size_t>();
    list += (list.empty() ? "" : ", ") + pass + " in " + std::to_string(models) + " model" + (models == 1 ? "" : "s");
  }
  if (!quiet && !list.empty()) std::cerr << "graphrw: changed nothing: " << list << "\n";
  for (const auto& m : report["models"])
    if (!m.value("ok", false))
      std::cerr << "graphrw:   " << errorLine(m.value("model", std::string()), m.value("error", std::string())) << "\n";
}

// What a batch shows while it runs: on a terminal one status line (bar,
// done/total, failures, time left, the model started last) that log lines
// clear and redraw; elsewhere a line per model.
class BatchProgress {
 public:
  BatchProgress(size_t total, bool quiet, bool dryRun)
      : total_(total), quiet_(quiet), dryRun_(dryRun), tty_(isatty(STDERR_FILENO) && !quiet) {}

  void started(const std::string& input) {
    if (!tty_) return;
    std::lock_guard lock(mutex_);
    running_.push_back(input);
    setStatusLine(status());
  }

  void finished(const BatchItem& item, size_t done, size_t failed) {
    if (tty_) {
      std::lock_guard lock(mutex_);
      std::erase(running_, item.input);
      done_ = done;
      failed_ = failed;
      if (!item.ok) printLine("graphrw: error: " + errorLine(item));
      setStatusLine(done == total_ ? std::string() : status());
    } else if (!quiet_) {
      std::string warned =
          item.warnings ? " (" + std::to_string(item.warnings) + " warning" + (item.warnings == 1 ? "" : "s") + ")"
                        : "";
      printLine("graphrw: [" + std::to_string(done) + "/" + std::to_string(total_) + "] " + escapeControl(item.input) +
                ": " + (item.ok ? (dryRun_ ? "checked (dry run)" : "converted") : "failed") + warned);
    }
  }

 private:
  std::string status() const {
    size_t width = 24, filled = width * done_ / total_;
    std::string line = "[" + std::string(filled, '=') + std::string(width - filled, ' ') + "] " +
                       std::to_string(done_) + "/" + std::to_string(total_);
    if (failed_) line += ", " + std::to_string(failed_) + " failed";
    if (done_) {
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      auto left = static_cast<long>(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) + 0.5);
      char eta[32];
      std::snprintf(eta, sizeof eta, ", %ld:%02ld left", left / 60, left % 60);
      line += eta;
    }
    if (!running_.empty()) line += ": " + escapeControl(running_.back());
    return line;
  }

  size_t total_;
  bool quiet_, dryRun_, tty_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::vector<std::string> running_;  // models being converted, oldest first
  size_t done_ = 0, failed_ = 0;
};

// The summary line on stderr, each failure under it, and the report file.
int summarise(const std::vector<BatchItem>& items, const RunArgs& args, const PipelineFlags& flags, double seconds,
              const Shard& shard) {
  size_t failed = 0, warnings = 0, warnedModels = 0;
  std::map<std::string, size_t> unchanged;  // pass -> models where it changed nothing
  nlohmann::json reports = nlohmann::json::array();
  for (const auto& item : items) {
    if (!item.ok) ++failed;
    for (const auto& pass : std::set<std::string>(item.unchanged.begin(), item.unchanged.end())) ++unchanged[pass];
    warnings += item.warnings;
    warnedModels += item.warnings > 0;
    reports.push_back({{"model", item.input},
                       {"output", item.ok && !flags.dryRun ? item.output : ""},
                       {"ok", item.ok},
                       {"error", item.error},
                       {"warnings", item.warnings},
                       {"unchanged_passes", item.unchanged},
                       {"passes", item.report}});
  }
  nlohmann::json summary = {{"models", items.size()},  {"converted", items.size() - failed},   {"failed", failed},
                            {"warnings", warnings},    {"models_with_warnings", warnedModels}, {"seconds", seconds},
                            {"dry_run", flags.dryRun}, {"unchanged_passes", unchanged}};
  if (!args.shard.empty())  // graphrw report merge checks that every shard is there, once
    summary["shard"] = {{"index", shard.index}, {"count", shard.count}, {"from", shard.from}};
  const nlohmann::json report{{"rules", args.rules}, {"summary", summary}, {"models", reports}};
  printSummary(report, "", flags.quiet);
  if (!flags.report.empty()) writeText(flags.report, report.dump(2) + "\n");
  return failed ? static_cast<int>(ExitCode::BadInput) : 0;
}

// graphrw run RULES MODEL... --out-dir DIR: every model through the same
// rules, each output named as its input.
int runBatchCommand(const RunArgs& args) {
  PipelineFlags flags = args.flags;
  if (flags.dryRun && flags.report.empty()) flags.report = "-";  // a dry run's result is its report
  // Parsed once, every rule error before any model is read; the passes are
  // immutable and shared by every model.
  const RuleFile rules = loadRules(args.rules);
  std::vector<std::string> all = checkBatchInputs(args.models, args.outDir);
  std::vector<BatchItem> items;
  const Shard shard = args.shard.empty() ? Shard{} : Shard::parse(args.shard);
  if (!args.shard.empty() && shard.from != "--shard" && !flags.quiet)
    std::cerr << "graphrw: shard " << shard.index << " of " << shard.count << " (from " << shard.from << ")\n";
  for (const auto& input : shardInputs(args.models, shard)) {
    BatchItem item;
    item.input = input;
    item.output = (fs::path(args.outDir) / fs::path(input).filename()).string();
    items.push_back(std::move(item));
  }
  WriteOptions writeOptions = args.external.writeOptions();
  writeOptions.protect.assign(all.begin(), all.end());
  std::once_flag madeOutDir;
  const auto start = std::chrono::steady_clock::now();
  BatchProgress progress(items.size(), flags.quiet, flags.dryRun);
  auto job = [&](BatchItem& item) {
    ModelLogScope scope(item.input);  // its log lines name the model
    progress.started(item.input);
    struct Finish {  // counts the model's warnings however the job ends
      BatchItem& item;
      ModelLogScope& scope;
      ~Finish() { item.warnings = scope.warnings(); }
    } finish{item, scope};
    auto model = loadModel(item.input);
    PassManager pm(flags.options());
    for (const auto& p : rules.passes) pm.add(p);
    auto report = pm.run(*model);
    const auto idle = unchangedPasses(report);
    for (const auto& pass : idle) item.unchanged.push_back(pass.name);
    checkUnchanged(idle, flags);
    if (!flags.dryRun) {
      // The folder appears with the first model written, not before.
      std::call_once(madeOutDir, [&] {
        std::error_code e;
        fs::create_directories(args.outDir, e);
        if (!fs::is_directory(args.outDir))
          fail(ExitCode::OutputFailed, "cannot create --out-dir '" + args.outDir + "'");
      });
      releaseFreedMemory();
      writeModel(*model, item.output, writeOptions);
    }
    if (!flags.report.empty()) item.report = std::move(report);
  };
  runBatch(items, args.jobs, job,
           [&](const BatchItem& item, size_t done, size_t failed) { progress.finished(item, done, failed); });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summarise(items, args, flags, seconds, shard);
}

}  // namespace

Command addRunCommand(CLI::App& app, const bool& quiet) {
  auto args = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "Run the passes of a rule file (docs/rules.md) on one model or many");
  run->add_option("rules", args->rules, "Rule file (JSON; graphrw schema prints its schema)")->required();
  run->add_option("models", args->models, "ONNX model(s); - for stdin (one model only)")->required();
  run->add_option("-o,--output", args->output, "Output file, or - for stdout (one model; default: MODEL.RULES.onnx)");
  run->add_option("--out-dir", args->outDir, "Folder for the outputs of several models (each keeps its input's name)");
  run->add_option("-j,--jobs", args->jobs, "Models converted at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  run->add_option(
      "--shard", args->shard,
      "I/N: take share I of N (0 <= I < N) of the sorted inputs; auto or auto/N: I (and N) from Slurm array "
      "jobs, Kubernetes Indexed Jobs or GNU parallel (docs/batch.md)");
  args->flags.add(run);
  args->external.add(run);
  run->footer(
      "\nExamples:\n  graphrw run examples/popart.rules.json model.onnx -o model.ipu.onnx\n"
      "  graphrw run rules.json models/*.onnx --out-dir converted -j 2 --report report.json\n"
      "  graphrw run rules.json model.onnx --dry-run\n");
  return {run, [args, &quiet] {
            if (args->models.size() > 1 || !args->outDir.empty() || !args->shard.empty()) {
              if (!args->output.empty()) usageError("-o is for one model; several models go to --out-dir");
              args->flags.quiet = quiet;
              return runBatchCommand(*args);
            }
            const std::string& input = args->models.front();
            RuleFile rules = loadRules(args->rules);  // every error before the model is even read
            std::string out = outputPath(input, args->output, rulesTag(args->rules));
            return runPipeline(input, out, std::move(rules.passes), args->flags, args->external);
          }};
}

Command addReportCommand(CLI::App& app) {
  struct Args {
    std::string action, output;
    std::vector<std::string> reports;
  };
  auto args = std::make_shared<Args>();
  auto* report =
      app.add_subcommand("report", "Merge the --report files of a batch's shards into one: graphrw report merge");
  report->add_option("action", args->action, "merge")->required()->check(CLI::IsMember({"merge"}));
  report->add_option("reports", args->reports, "Report files of graphrw run --shard ... --report")->required();
  report->add_option("-o,--output", args->output, "The merged report file (default: - for stdout)");
  report->footer(
      "\nExamples:\n  graphrw report merge reports/*.json -o report.json\n"
      "\nPrints the summary line of the whole batch on stderr. Exit status: 0 when every model converted, 3 when\n"
      "one failed or the reports do not belong together (another rule file, a model twice, a shard missing).\n");
  return {report, [args] {
            if (!args->output.empty() && args->output != "-") checkOutputPath(args->output);
            std::vector<std::pair<std::string, nlohmann::json>> reports;
            for (const auto& file : args->reports) {
              try {
                reports.emplace_back(file, nlohmann::json::parse(readTextFile(file, "report")));
              } catch (const nlohmann::json::exception& e) {
                badInput("report merge: " + file + ": not JSON (" + e.what() + ")");
              }
            }
            nlohmann::json merged = mergeReports(reports);
            const auto& s = merged["summary"];
            printSummary(merged, std::to_string(s["shards"].get<size_t>()) + " shards: ", false);
            writeText(args->output.empty() ? "-" : args->output, merged.dump(2) + "\n");
            return s["failed"].get<size_t>() ? static_cast<int>(ExitCode::BadInput) : 0;
          }};
}

}  // namespace graphrw::cli
