// What the command line's files share: the flags every rewriting command has,
// output naming and the one load -> passes -> write path. Internal to lib/driver.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pass.h"
#include "pass_manager.h"
#include "writer.h"

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
  std::string printIrAfter;
  size_t stopAfter = 0;
  void add(CLI::App* cmd);
  PipelineOptions options() const;
};

// Without -o a command writes beside its input under a name that says what it did.
std::string outputPath(const std::string& input, const std::string& requested, const std::string& what);

// Loads, runs the passes through the pass manager, writes: every rewriting
// subcommand and `run` on one model go through here.
int runPipeline(const std::string& input, const std::string& out, std::vector<std::shared_ptr<const Pass>> passes,
                const PipelineFlags& flags, const ExternalOptions& external);

// Text to stdout ("-") or to a file, through a temporary file and a rename.
void writeText(const std::string& path, const std::string& text);

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
