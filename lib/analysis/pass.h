// The pass interface and the pass registry.
//
// A pass is declared once, in its own file under passes/: a PassSpec with its
// name, a one-line summary, its schema file, its command-line options and a
// factory from the JSON entry a rule file holds. The command line never builds
// a pass itself: its flags become that same JSON entry (OptionSpec::pointer
// says where each goes), which is validated against the pass's schema and
// handed to the factory, exactly as a rule file's entry is. A pass object is
// immutable: run() is const and keeps per-run state in locals, so one object
// runs on any number of models.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/rewriter.h"

namespace graphrw {

// Where a pass's options came from, for messages and for relative paths: a
// rule file ("FILE:LINE: /json/pointer") or a command line ("--flag value").
struct RuleContext {
  std::string file;  // the rule file; "" for a command line
  std::string text;  // its text (for line numbers)
  // Set for a command line: the flag (and value) that gave the value at a pointer.
  std::function<std::string(const std::string& pointer)> describe;

  std::string at(const std::string& pointer) const;
  // The folder relative file names in options are read from: the rule file's, or the working directory.
  std::filesystem::path baseDir() const;
};

struct PassContext {
  ir::Rewriter& rewriter;
  nlohmann::json details = nlohmann::json::object();  // pass-specific report entries
  size_t matched = 0;                                  // nodes or blocks the pass's selectors matched
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Edits only through context.rewriter. Throws graphrw::Error naming the node and rule on failure.
  virtual void run(ir::Model& model, PassContext& context) const = 0;
};

// One command-line option of a pass and where its value goes in the pass's JSON entry.
struct OptionSpec {
  enum class Kind {
    String,     // --opt TEXT                      -> "TEXT"
    Integer,    // --opt N                         -> N (a usage error when not a 64-bit integer)
    Flag,       // --opt                           -> true
    NoFlag,     // --no-opt                        -> false
    Selectors,  // --opt SEL (repeatable)          -> a selector object, or a list of them
    List,       // --opt A,B (repeatable, CLI11's delimiter) -> ["A", "B"]
    Pairs,      // --opt K=V (repeatable)          -> {"K": "V"}
    JsonPairs,  // --opt K=V (repeatable)          -> {"K": V as JSON, else the string}
    Json,       // --opt JSON                      -> the JSON value
  };
  std::string flags{};             // CLI11 names: "--every" or "-k,--key"
  std::string pointer{};           // JSON pointer in the entry: "/every", "/replacements/0/with"
  Kind kind = Kind::String;
  std::string help{};
  std::vector<std::string> allowed{};  // String: the values the schema allows (checked by CLI11 too)
  std::string defaultValue{};          // shown in --help
  bool required = false;
  // In messages about the object holding `pointer` (e.g. "/replacements/0"),
  // this flag and its value name it ("--with Gelu").
  bool labels = false;
  std::vector<std::string> excludes{};  // flags this one cannot be given with
  std::vector<std::string> needs{};     // flags this one needs
  // Replaces the default conversion of the given values (e.g. "all" for a list).
  std::function<nlohmann::json(const std::vector<std::string>& values)> convert{};
};

struct PassSpec {
  std::string name{};       // rule files' "pass" and the subcommand
  std::string summary{};    // one line
  std::string schema{};     // below schemas/: "passes/NAME.schema.json"
  std::string outputTag{};  // without -o, MODEL.onnx is written to MODEL.<outputTag>.onnx
  std::vector<OptionSpec> options{};
  std::vector<std::string> examples{};  // command lines for --help
  // From an entry already valid against `schema`; `pointer` is the entry's
  // place in the rule file ("" for a command line). Throws Error(Usage).
  std::function<std::unique_ptr<Pass>(const nlohmann::json& entry, const RuleContext& where, const std::string& pointer)>
      create{};
};

// Every registered pass, by name.
const std::vector<const PassSpec*>& registeredPasses();
const PassSpec* findPass(std::string_view name);

// `static const RegisterPass registration{PassSpec{...}};` in the pass's .cpp.
struct RegisterPass {
  explicit RegisterPass(PassSpec spec);
};

// The no-match policy every pass shares: an explicit selector that matched
// nothing is an error (Usage) naming the pass and the selector, or a warning
// when `allowNoMatch` (allow_no_match / --allow-no-match).
void reportNoMatch(const std::string& pass, const std::string& what, bool allowNoMatch);

}  // namespace graphrw
