// Shell completion scripts generated from the command line's own declarations
// (the same CLI11 tree `--help` prints), so they cannot drift from it.
#pragma once

#include <string>
#include <vector>

namespace graphrw::cli {

struct CompletionOption {
  std::vector<std::string> names;  // "-o", "--output"
  std::string help;
  bool takesValue = false;
  std::vector<std::string> choices;  // values the option accepts, when a fixed set
  bool file = false;  // the value is a path
};

struct CompletionCommand {
  std::string name, help;
  std::vector<CompletionOption> options;
  bool filePositionals = false;  // MODEL, RULES.json, ...
  std::vector<std::string> positionalChoices;  // a positional taking a fixed set of words (completion's shell)
};

struct CompletionSpec {
  std::vector<CompletionOption> global;  // -v, -q, --help, --version
  std::vector<CompletionCommand> commands;
};

// A script for `source <(graphrw completion bash)` or
// /usr/share/bash-completion/completions/graphrw.
std::string bashCompletion(const CompletionSpec& spec);
// A `#compdef graphrw` function file (_graphrw) for a directory in $fpath.
std::string zshCompletion(const CompletionSpec& spec);

}  // namespace graphrw::cli
