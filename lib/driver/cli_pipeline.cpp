// The one load -> passes -> write path of every rewriting command, and the
// flags and output naming those commands share (cli_common.h).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "driver/cli_common.h"
#include "io/atomic_file.h"
#include "io/loader.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace graphrw::cli {

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
  cmd->add_flag("--embed-external-data", embed, "Write every tensor into the model itself")
      ->excludes("--external-data");
}

WriteOptions ExternalOptions::writeOptions() const {
  WriteOptions o;
  if (embed)
    o.external = ExternalMode::Embed;
  else if (!file.empty())
    o.external = ExternalMode::Move;
  o.externalFile = file;
  o.threshold = threshold;
  return o;
}

void PipelineFlags::add(CLI::App* cmd) {
  cmd->add_option("--report", report, "Write a JSON report of what each pass did (- for stdout when -o is a file)");
  cmd->add_flag("--verify-each", verifyEach, "Run the IR verifier after every pass");
  cmd->add_flag("--dry-run", dryRun, "Run the passes and report what they would change; write nothing");
  cmd->add_option("--print-ir-after", printIrAfter,
                  "Print the IR as ONNX text to stderr after this pass (name, index or all)");
  cmd->add_flag("--strict", strict, "A pass that changed nothing is an error (exit 1), for CI");
  cmd->add_option("--stop-after", stopAfter, "Run only the first N passes (for bisecting)")->check(CLI::PositiveNumber);
}

PipelineOptions PipelineFlags::options() const {
  PipelineOptions o;
  o.verifyEach = verifyEach;
  if (stopAfter > 0) o.stopAfter = stopAfter;
  o.printIrAfter = printIrAfter;
  return o;
}

std::vector<IdlePass> unchangedPasses(const nlohmann::json& report) {
  std::vector<IdlePass> idle;
  for (const auto& entry : report)
    if (!entry.value("changed", true))
      idle.push_back({entry.at("pass").get<std::string>(), entry.value("matched", size_t{0})});
  return idle;
}

void checkUnchanged(const std::vector<IdlePass>& idle, const PipelineFlags& flags) {
  std::string list;
  for (const auto& p : idle)
    list += (list.empty() ? "" : ", ") + p.name + " (" + std::to_string(p.matched) + " matched)";
  if (list.empty()) return;
  if (flags.strict) fail(ExitCode::Findings, "--strict: a pass changed nothing: " + list);
  spdlog::info("changed nothing: {}", list);
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

}  // namespace

// Freeing a large IR node by node only costs time (a fifth of expanding a
// 2M-node model), so it is left to the OS.
void releaseAtExit(std::unique_ptr<ir::Model>& model) {
#ifdef GRAPHRW_SANITIZE
  model.reset();
#else
  (void)model.release();
#endif
}

void releaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void writeOut(ir::Model& model, const std::string& path, const WriteOptions& options) {
  releaseFreedMemory();
  auto result = writeModel(model, path, options);
  if (path != "-") spdlog::info("wrote {} ({} bytes)", path, result.modelBytes);
  for (const auto& f : result.dataFiles) spdlog::info("wrote {} ({} bytes of external data)", f, result.externalBytes);
}

int runPipeline(const std::string& input, const std::string& out, std::vector<std::shared_ptr<const Pass>> passes,
                const PipelineFlags& flags, const ExternalOptions& external) {
  // Every usage conflict before the input is read or an output touched.
  if (!flags.dryRun && flags.report == "-" && out == "-")
    usageError("--report - needs the model written to a file with -o (or --dry-run)");
  if (!flags.report.empty() && flags.report != "-") {
    checkOutputPath(flags.report);
    std::error_code ec;
    if ((out != "-" && fs::equivalent(flags.report, out, ec)) ||
        (input != "-" && fs::equivalent(flags.report, input, ec)))
      usageError("--report " + flags.report + " would overwrite a model; choose another file");
  }
  WriteOptions writeOptions = external.writeOptions();
  if (input != "-") writeOptions.protect.push_back(input);
  auto model = loadModel(input);
  PassManager pm(flags.options());
  for (auto& p : passes) pm.add(std::move(p));
  auto report = pm.run(*model);
  checkUnchanged(unchangedPasses(report), flags);
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

}  // namespace graphrw::cli
