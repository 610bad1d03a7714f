// What the command line's files share: the flags every rewriting command has,
// output naming, the one load -> passes -> write path, and each command's
// declaration. Internal to lib/driver:
//   cli.cpp           main(): global flags, parsing, help, completion, dispatch
//   cli_pipeline.cpp  output naming, shared flags, load -> passes -> write
//   cli_passes.cpp    one subcommand per registered pass
//   cli_run.cpp       run: a rule file on one model or a batch
//   cli_commands.cpp  inspect, convert, schema, compare, validate
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "driver/pass_manager.h"
#include "io/writer.h"
#include "pass/pass.h"

namespace graphrw::cli {

struct ExternalOptions {
  std::string file;
  uint64_t threshold = 1024;
  bool embed = false;
  void add(CLI::App* cmd);
  WriteOptions writeOptions() const;
};

// Options every rewriting subcommand shares.
struct PipelineFlags {
  std::string report;
  bool verifyEach = false;
  bool quiet = false;
  bool dryRun = false;
  bool strict = false;  // a pass that changed nothing is an error
  std::string printIrAfter;
  size_t stopAfter = 0;
  void add(CLI::App* cmd);
  PipelineOptions options() const;
};

// A pass of a pass-manager report that changed nothing.
struct IdlePass {
  std::string name;
  size_t matched;
};
std::vector<IdlePass> unchangedPasses(const nlohmann::json& report);
// Says which passes changed nothing, as "outline (0 matched)" (an info line),
// or with --strict fails (ExitCode::Findings) naming them.
void checkUnchanged(const std::vector<IdlePass>& idle, const PipelineFlags& flags);

// Without -o a command writes beside its input under a name that says what it did.
std::string outputPath(const std::string& input, const std::string& requested, const std::string& what);

// Loads, runs the passes through the pass manager, writes: every rewriting
// subcommand and `run` on one model go through here.
int runPipeline(const std::string& input, const std::string& out, std::vector<std::shared_ptr<const Pass>> passes,
                const PipelineFlags& flags, const ExternalOptions& external);

// Text to stdout ("-") or to a file, through a temporary file and a rename.
void writeText(const std::string& path, const std::string& text);

// Writes the model and logs what was written (after releaseFreedMemory).
void writeOut(ir::Model& model, const std::string& path, const WriteOptions& options);

// Hands the heap's free pages back to the kernel: the passes' freed working
// memory (a changed-node set, a graph-order list: 10-25 MB at a million
// nodes), which main()'s M_TRIM_THRESHOLD of 32 MiB would otherwise keep
// while the writer adds its buffers on top. Called once before each write.
void releaseFreedMemory();

// The process ends right after a command: the model is left to the OS (freed
// under the sanitizers, so that LeakSanitizer reports only real leaks).
void releaseAtExit(std::unique_ptr<ir::Model>& model);

// A command other than a pass: its subcommand, and what runs (returning the
// exit code) when it was the one parsed. Its arguments live in the closure.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Command addInspectCommand(CLI::App& app);
Command addConvertCommand(CLI::App& app);
// `quiet` is the global -q, read when the command runs.
Command addRunCommand(CLI::App& app, const bool& quiet);
Command addSchemaCommand(CLI::App& app);
Command addReportCommand(CLI::App& app);
Command addCompareCommand(CLI::App& app);
Command addValidateCommand(CLI::App& app);

// A subcommand for every registered pass; `run(app)` runs the one that was parsed.
class PassCommands {
 public:
  explicit PassCommands(CLI::App& app);
  ~PassCommands();
  // The parsed pass subcommand's exit code, or nothing when none was parsed.
  std::optional<int> runParsed();

 private:
  struct Command;
  std::vector<std::unique_ptr<Command>> commands_;
};

}  // namespace graphrw::cli
