// graphrw's command line: global flags, one subcommand per registered pass
// and per command (cli_common.h lists the files), parsing with did-you-mean
// errors, help and shell completion, and the dispatch to what was parsed.
#include "driver/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <iostream>

#include "driver/cli_common.h"
#include "driver/completion.h"
#include "driver/console.h"
#include "support/error.h"
#include "support/json_text.h"

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
  // A single-value option given twice (CLI11: "--gelu: At Most 1 required but received 2").
  const std::string atMost = ": At Most 1 required but received ";
  if (auto at = msg.find(atMost); at != std::string::npos)
    msg = msg.substr(0, at) + " is given " + msg.substr(at + atMost.size()) + " times; it takes one value";
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

// The words of a CLI11 type name's set ("TEXT:{bash,zsh}" -> bash, zsh).
std::vector<std::string> choicesOf(const CLI::Option& o) {
  std::vector<std::string> out;
  const std::string type = o.get_type_name();
  auto open = type.find('{'), close = type.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::string item;
  for (char ch : type.substr(open + 1, close - open - 1) + ",") {
    if (ch == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else if (ch != ' ') {
      item += ch;
    }
  }
  return out;
}

std::vector<CompletionOption> completionOptions(const CLI::App& cmd) {
  std::vector<CompletionOption> out;
  for (const CLI::Option* o : cmd.get_options()) {
    if (!o->nonpositional()) continue;
    CompletionOption c;
    for (const auto& n : o->get_snames()) c.names.push_back("-" + n);
    for (const auto& n : o->get_lnames()) c.names.push_back("--" + n);
    c.help = o->get_description();
    c.takesValue = o->get_expected_max() > 0;  // a flag expects none (its type size is still 1)
    c.choices = choicesOf(*o);
    std::string lower = c.help;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    c.file = c.takesValue && c.choices.empty() &&
             (lower.find("file") != std::string::npos || lower.find("folder") != std::string::npos);
    out.push_back(std::move(c));
  }
  return out;
}

// The command line's declarations as completion data.
CompletionSpec completionSpec(const CLI::App& app) {
  CompletionSpec spec;
  spec.global = completionOptions(app);
  for (const CLI::App* sub : app.get_subcommands({})) {
    CompletionCommand c{sub->get_name(), sub->get_description(), completionOptions(*sub), false, {}};
    for (const CLI::Option* o : sub->get_options()) {
      if (o->nonpositional()) continue;
      auto choices = choicesOf(*o);
      if (!choices.empty())
        c.positionalChoices = choices;
      else
        c.filePositionals |= sub->get_name() != "help";
    }
    spec.commands.push_back(std::move(c));
  }
  return spec;
}

// graphrw help [COMMAND]
int showHelp(CLI::App& app, const std::string& topic) {
  if (topic.empty()) {
    // The top-level help itself (app.help() would show the parsed `help` subcommand's).
    std::cout << app.get_formatter()->make_help(&app, "graphrw", CLI::AppFormatMode::Normal);
    return 0;
  }
  for (const CLI::App* sub : app.get_subcommands({}))
    if (sub->get_name() == topic) {
      std::cout << sub->help("graphrw");  // "Usage: graphrw COMMAND ...", as COMMAND --help prints
      return 0;
    }
  std::cerr << "graphrw: error: " << escapeControl(unknownCommand(app, topic)) << "\n";
  return static_cast<int>(ExitCode::Usage);
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

  // In the order --help lists them.
  std::vector<Command> commands;
  commands.push_back(addInspectCommand(app));
  commands.push_back(addConvertCommand(app));
  PassCommands passCommands(app);  // one subcommand per registered pass (passes/), from its declaration
  commands.push_back(addRunCommand(app, quiet));
  commands.push_back(addReportCommand(app));
  commands.push_back(addSchemaCommand(app));
  std::string helpTopic;
  auto* help = app.add_subcommand("help", "Show the help of graphrw or of one command: graphrw help [COMMAND]");
  help->add_option("command", helpTopic, "A command");
  help->footer("\nExamples:\n  graphrw help\n  graphrw help outline\n");
  commands.push_back(addCompareCommand(app));
  std::string shell;
  auto* completion = app.add_subcommand("completion", "Print a shell completion script: graphrw completion bash|zsh");
  completion->add_option("shell", shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  completion->footer(
      "\nExamples:\n  source <(graphrw completion bash)\n"
      "  graphrw completion zsh > ~/.zfunc/_graphrw   # a folder in $fpath\n");
  commands.push_back(addValidateCommand(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "graphrw: error: " << escapeControl(explainParseError(app, e, argc, argv)) << "\n";
    return static_cast<int>(ExitCode::Usage);
  }
  if (help->parsed()) return showHelp(app, helpTopic);
  if (completion->parsed()) {
    auto spec = completionSpec(app);
    std::cout << (shell == "bash" ? bashCompletion(spec) : zshCompletion(spec));
    return 0;
  }
  setupLogging(verbosity, quiet);  // schemas load on first lookup (findSchema): convert never pays for them

  try {
    if (auto status = passCommands.runParsed()) return *status;
    for (const Command& c : commands)
      if (c.app->parsed()) return c.run();
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
