// Validates JSON documents against graphrw's own JSON Schemas (schemas/*.json,
// embedded at build time), so the rule-file parser and the schema that
// editors and CI use cannot drift apart. Supports the keywords those schemas
// use: $ref (within and across the embedded files), type, const, enum,
// properties, required, additionalProperties, minProperties, items,
// minItems, minLength, oneOf, anyOf. Annotations are ignored.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "support/json_text.h"

namespace graphrw {

struct SchemaError {
  std::string pointer;  // JSON pointer into the instance, "" for the root
  std::string message;
};

class SchemaSet {
 public:
  // The embedded schema files, by path below schemas/ ("rules.schema.json"),
  // and every registered pass's ("passes/NAME.schema.json", PassSpec::schema()).
  static const SchemaSet& builtin();
  // Throws std::logic_error when the schema uses a keyword this validator
  // does not implement: a keyword ignored here would let rule files drift from it.
  void add(const std::string& path, nlohmann::json schema);

  // The first error of `instance` against the schema at `path` (+ `fragment`, a JSON pointer).
  std::optional<SchemaError> validate(const nlohmann::json& instance, const std::string& path,
                                      const std::string& fragment = "") const;
  // The first error of `instance` against a schema given inline (one without $ref).
  std::optional<SchemaError> validateWith(const nlohmann::json& schema, const nlohmann::json& instance) const {
    return check(schema, "", instance, "");
  }
  // A schema document as added.
  const nlohmann::json& document(const std::string& path) const { return docs_.at(path); }
  // A schema with every document it refers to, as one self-contained document.
  nlohmann::json bundle(const std::string& path) const;

 private:
  std::optional<SchemaError> check(const nlohmann::json& schema, const std::string& doc, const nlohmann::json& inst,
                                   const std::string& pointer) const;
  std::pair<const nlohmann::json*, std::string> resolve(const std::string& ref, const std::string& fromDoc) const;
  std::map<std::string, nlohmann::json> docs_;
};

}  // namespace graphrw
