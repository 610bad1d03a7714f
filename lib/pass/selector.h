// graphrw's one selector language, shared by every pass, the command line and
// rule files. A Selector's keys are ANDed; a SelectorSet matches when any of
// its selectors does.
//
//   name=GLOB        the node's name; '*' matches anything, '/' included
//   name_regex=RE    the node's name, ECMAScript regex, whole-name match
//   op_type=OP       the op type (for a call: the function's name)
//   domain=D         the op's domain ("" and "ai.onnx" are the same)
//   scope=GLOB       a node-name prefix in which '*' does not cross '/';
//                    each distinct prefix it matches is one block
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace graphrw {

struct Selector {
  std::optional<std::string> name, nameRegex, opType, domain, scope;
  std::optional<std::regex> compiledRegex;  // built from nameRegex

  // Parses "key=value,key=value". Throws Error(Usage) naming the bad part.
  static Selector parse(const std::string& text);
  // Checks globs and compiles the regex; throws Error(Usage) with `where`.
  void compile(const std::string& where);
  // The same, with the message prefix for each key ("" for the selector as a whole).
  void compile(const std::function<std::string(const char* key)>& whereOf);
  bool matches(const ir::Node& node) const;
  // Whether a name (an initializer's) matches: name, name_regex and scope only;
  // a selector with op_type or domain matches no name.
  bool matchesName(const std::string& text) const;
  // The scope block a node belongs to (the matched prefix), when `scope` is set.
  std::optional<std::string> scopeOf(std::string_view nodeName) const;
  std::string str() const;
  // The rule-file form: {"op_type": "Relu", ...}.
  nlohmann::json toJson() const;
  bool empty() const;

 private:
  // name, name_regex and scope against a name.
  bool namePartsMatch(const char* text) const;
};

struct SelectorSet {
  std::vector<Selector> any;
  // An object or a list of objects; `at` gives the message prefix for a JSON pointer.
  static SelectorSet fromJson(const nlohmann::json& j, const std::function<std::string(const std::string&)>& at,
                              const std::string& pointer);
  bool empty() const { return any.empty(); }
  bool matches(const ir::Node& node) const;
  std::string str() const;
};

// fnmatch(3) glob match; `crossSlash` false makes '*' and '?' stop at '/'.
bool globMatch(const std::string& pattern, const char* text, bool crossSlash);

}  // namespace graphrw
