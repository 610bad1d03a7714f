// The pass interface and the pass registry.
//
// A pass is declared once, in its own file under passes/: a PassSpec with its
// name, a one-line summary, its options (each with its key, schema, default,
// help and flag) and a factory from the JSON entry a rule file holds. Its
// rule-file schema, its subcommand and the options table of docs/passes/NAME.md are
// made from that declaration. The command line never builds a pass itself:
// its flags become that same JSON entry (OptionSpec::target() says where each
// goes), which is validated against the pass's schema, completed with the
// declared defaults and handed to the factory, exactly as a rule file's entry
// is. A pass object is immutable: run() is const and keeps per-run state in
// locals, so one object runs on any number of models.
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
  size_t matched = 0;  // nodes or blocks the pass's selectors matched
};

class Pass {
 public:
  virtual ~Pass() = default;
  // Its PassSpec's name (buildPass() checks that they agree).
  virtual std::string name() const = 0;
  // Edits only through context.rewriter. Throws graphrw::Error naming the node and rule on failure.
  virtual void run(ir::Model& model, PassContext& context) const = 0;
};

// One option of a pass, declared once: its rule-file key, its value's JSON
// Schema, its default and its help, and the command-line flag that sets it.
// The pass's rule-file schema, its subcommand's flags, the options table in
// docs/passes/NAME.md and the defaults its factory reads are all made from this.
struct OptionSpec {
  enum class Kind {
    String,  // --opt TEXT                      -> "TEXT"
    Integer,  // --opt N                         -> N (a usage error when not a 64-bit integer)
    Flag,  // --opt                           -> true
    NoFlag,  // --no-opt                        -> false
    Selectors,  // --opt SEL (repeatable)          -> a selector object, or a list of them
    List,  // --opt A,B (repeatable, CLI11's delimiter) -> ["A", "B"]
    Pairs,  // --opt K=V (repeatable)          -> {"K": "V"}
    JsonPairs,  // --opt K=V (repeatable)          -> {"K": V as JSON, else the string}
    Json,  // --opt JSON                      -> the JSON value
  };
  // The key in the pass's rule-file entry ("every"). Empty for a flag that
  // sets a field inside a structured key (`pointer`: "/replacements/0/with"),
  // whose schema that key's option declares.
  std::string key{};
  std::string flags{};  // CLI11 names: "--every" or "-k,--key"; "" when only rule files set it
  std::string pointer{};  // a field flag's place in the entry ("/replacements/0/with"), with no key
  Kind kind = Kind::String;
  // --help; for a key, the schema's description and the docs table too.
  std::string help{};
  // The value's JSON Schema: {"type": "integer", "minimum": 1}, {"enum": [...]}
  // (which the flag accepts too), {"$ref": "../rules.schema.json#/$defs/selectors"}.
  nlohmann::json schema{};
  // The value when the key is absent: the schema's "default", --help's and the
  // docs', and what buildPass() puts in the entry before the factory reads it
  // (so a factory never repeats it). null: no default (absent means unset).
  nlohmann::json defaultValue{};
  bool required = false;
  // In messages about the object holding `pointer` (e.g. "/replacements/0"),
  // this flag and its value name it ("--with Gelu").
  bool labels = false;
  std::vector<std::string> excludes{};  // flags this one cannot be given with
  std::vector<std::string> needs{};  // flags this one needs
  // Replaces the default conversion of the given values (e.g. "all" for a list).
  std::function<nlohmann::json(const std::vector<std::string>& values)> convert{};

  // Where the flag's value goes in the entry: "/KEY", or the field's pointer.
  std::string target() const { return key.empty() ? pointer : "/" + key; }
};

struct PassSpec {
  std::string name{};  // rule files' "pass", the subcommand, the report's "pass" and Pass::name()
  std::string summary{};  // one line: the subcommand's description
  std::string description{};  // the schema's description ("" = the summary)
  std::string outputTag{};  // without -o, MODEL.onnx is written to MODEL.<outputTag>.onnx
  std::vector<OptionSpec> options{};
  nlohmann::json defs{};  // the schema's $defs (structures a key's schema refers to)
  nlohmann::json constraints{};  // further keywords of the entry's schema ({"oneOf": [...]}: one of two keys)
  std::vector<std::string> examples{};  // command lines for --help
  // From an entry valid against the pass's schema, every default filled in;
  // `pointer` is the entry's place in the rule file ("" for a command line).
  // Throws Error(Usage).
  std::function<std::unique_ptr<Pass>(const nlohmann::json& entry, const RuleContext& where,
                                      const std::string& pointer)>
      create{};

  // The rule-file entry's JSON Schema ("passes/NAME.schema.json" among the
  // embedded schemas, `graphrw schema`), made from the options.
  nlohmann::json schema() const;
  // Where the schema is kept: "passes/NAME.schema.json".
  std::string schemaPath() const { return "passes/" + name + ".schema.json"; }
  // `entry` with the default of every absent option that has one.
  nlohmann::json withDefaults(nlohmann::json entry) const;
  // The option with this key; throws std::logic_error when there is none.
  const OptionSpec& option(std::string_view key) const;
};

// Every registered pass, by name.
const std::vector<const PassSpec*>& registeredPasses();
const PassSpec* findPass(std::string_view name);

// `static const RegisterPass registration{PassSpec{...}};` in the pass's .cpp.
// Throws std::logic_error for a declaration that cannot work (no name, summary
// or factory, a key or flag twice, an option without schema or help, a field
// flag under no declared key). tests/passes/test_registry.cpp checks the rest
// (defaults valid against their schemas, flags' enums).
struct RegisterPass {
  explicit RegisterPass(PassSpec spec);
};

// The declared default of a registered pass's option: for the C++ option
// structs' member initializers, so that a struct default cannot drift from
// the rule file's. Throws std::logic_error for an unknown pass or key, or an
// option without a default.
const nlohmann::json& optionDefault(std::string_view pass, std::string_view key);
template <typename T>
T optionDefaultAs(std::string_view pass, std::string_view key) {
  return optionDefault(pass, key).get<T>();
}
// A registered pass's entry with every declared default filled in (for
// option parsers called outside buildPass()).
nlohmann::json withDefaults(std::string_view pass, nlohmann::json entry);

// The no-match policy every pass shares: an explicit selector that matched
// nothing is an error (Usage) naming the pass and the selector, or a warning
// when `allowNoMatch` (allow_no_match / --allow-no-match).
void reportNoMatch(const std::string& pass, const std::string& what, bool allowNoMatch);

}  // namespace graphrw
