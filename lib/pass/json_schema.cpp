#include "pass/json_schema.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>
#include <stdexcept>
#include <vector>

#include "pass/pass.h"
#include "support/embedded.h"

namespace graphrw {

using nlohmann::json;

namespace {

std::string typeOf(const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::null:
      return "null";
    default:
      return "value";
  }
}

bool hasType(const json& j, const std::string& t) {
  std::string actual = typeOf(j);
  return actual == t || (t == "number" && actual == "integer");
}

// "passes/expand.schema.json" + "../rules.schema.json" -> "rules.schema.json"
std::string joinPath(const std::string& from, const std::string& rel) {
  std::vector<std::string> parts;
  auto split = [&](const std::string& p) {
    size_t start = 0;
    while (start <= p.size()) {
      size_t slash = p.find('/', start);
      std::string part = p.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
  };
  size_t dir = from.rfind('/');
  if (dir != std::string::npos) split(from.substr(0, dir));
  split(rel);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

}  // namespace

void SchemaSet::add(const std::string& path, json schema) {
  static const std::vector<std::string> supported = {"$schema",  "$id",           "$ref",        "$defs",
                                                     "$comment", "title",         "description", "examples",
                                                     "default",  "type",          "const",       "enum",
                                                     "oneOf",    "anyOf",         "properties",  "additionalProperties",
                                                     "required", "minProperties", "items",       "minItems",
                                                     "maxItems", "uniqueItems",   "minLength",   "minimum",
                                                     "maximum",  "pattern"};
  std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& where) {
    if (!node.is_object()) return;
    for (const auto& [k, v] : node.items()) {
      if (std::find(supported.begin(), supported.end(), k) == supported.end())
        throw std::logic_error(path + where + ": schema keyword '" + k + "' is not implemented by graphrw's validator");
      if (k == "properties" || k == "$defs") {
        for (const auto& [name, sub] : v.items()) walk(sub, where + "/" + k + "/" + name);
      } else if (k == "oneOf" || k == "anyOf") {
        for (size_t i = 0; i < v.size(); ++i) walk(v[i], where + "/" + k + "/" + std::to_string(i));
      } else if (k == "items" || (k == "additionalProperties" && v.is_object())) {
        walk(v, where + "/" + k);
      }
    }
  };
  walk(schema, "");
  docs_[path] = std::move(schema);
}

const SchemaSet& SchemaSet::builtin() {
  static const SchemaSet set = [] {
    SchemaSet s;
    // Every schema file below schemas/ (the rule file's frame), and each
    // registered pass's, made from its declaration.
    for (const auto& f : embedded::files())
      if (f.path.ends_with(".schema.json")) s.add(std::string(f.path), json::parse(f.text));
    for (const PassSpec* spec : registeredPasses()) s.add(spec->schemaPath(), spec->schema());
    return s;
  }();
  return set;
}

std::pair<const json*, std::string> SchemaSet::resolve(const std::string& ref, const std::string& fromDoc) const {
  size_t hash = ref.find('#');
  std::string file = ref.substr(0, hash);
  std::string fragment = hash == std::string::npos ? "" : ref.substr(hash + 1);
  std::string doc = file.empty() ? fromDoc : joinPath(fromDoc, file);
  auto it = docs_.find(doc);
  if (it == docs_.end()) throw std::logic_error("schema $ref to unknown document '" + ref + "' from " + fromDoc);
  const json* target = &it->second;
  if (!fragment.empty()) target = &it->second.at(json::json_pointer(fragment));
  return {target, doc};
}

std::optional<SchemaError> SchemaSet::validate(const json& instance, const std::string& path,
                                               const std::string& fragment) const {
  const json& doc = docs_.at(path);
  const json& schema = fragment.empty() ? doc : doc.at(json::json_pointer(fragment));
  return check(schema, path, instance, "");
}

// Long: one short branch per schema keyword the validator implements, in the order a message should name them.
std::optional<SchemaError> SchemaSet::check(const json& schema, const std::string& doc, const json& inst,
                                            const std::string& pointer) const {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return std::nullopt;
    return SchemaError{pointer, "is not allowed here"};
  }
  if (auto ref = schema.find("$ref"); ref != schema.end()) {
    auto [target, targetDoc] = resolve(ref->get<std::string>(), doc);
    if (auto e = check(*target, targetDoc, inst, pointer)) return e;
  }
  if (auto c = schema.find("const"); c != schema.end() && inst != *c)
    return SchemaError{pointer, "must be " + c->dump()};
  if (auto e = schema.find("enum"); e != schema.end()) {
    if (std::find(e->begin(), e->end(), inst) == e->end()) return SchemaError{pointer, "must be one of " + e->dump()};
  }
  if (auto t = schema.find("type"); t != schema.end()) {
    std::vector<std::string> types;
    if (t->is_string())
      types.push_back(t->get<std::string>());
    else
      for (const auto& x : *t) types.push_back(x.get<std::string>());
    bool ok = std::any_of(types.begin(), types.end(), [&](const std::string& x) { return hasType(inst, x); });
    if (!ok) {
      std::string want;
      for (const auto& x : types) want += (want.empty() ? "" : " or ") + x;
      // 99999999999999999999 parses as a float: name the real problem.
      if (inst.is_number_float() && std::find(types.begin(), types.end(), "integer") != types.end() &&
          std::isfinite(inst.get<double>()) && std::trunc(inst.get<double>()) == inst.get<double>() &&
          std::fabs(inst.get<double>()) >= 9.2e18)
        return SchemaError{pointer, "is too large for a 64-bit integer"};
      std::string article = (want[0] == 'a' || want[0] == 'i' || want[0] == 'o') ? "an " : "a ";
      return SchemaError{pointer, "must be " + article + want + ", not " + typeOf(inst)};
    }
  }
  for (const char* key : {"oneOf", "anyOf"}) {
    auto branches = schema.find(key);
    if (branches == schema.end()) continue;
    size_t matches = 0;
    std::optional<SchemaError> best;
    std::vector<std::string> shallow;
    for (const auto& b : *branches) {
      auto e = check(b, doc, inst, pointer);
      if (!e) {
        ++matches;
        continue;
      }
      // The branch that got furthest into the instance says the most.
      if (e->pointer.size() > pointer.size()) {
        if (!best || e->pointer.size() > best->pointer.size()) best = e;
      } else {
        shallow.push_back(e->message);
      }
    }
    if (matches == 0) {
      if (best) return best;
      std::string msg;
      for (const auto& m : shallow) msg += (msg.empty() ? "" : ", or ") + m;
      return SchemaError{pointer, msg};
    }
    if (std::string(key) == "oneOf" && matches > 1) return SchemaError{pointer, "matches more than one allowed form"};
  }
  if (inst.is_object()) {
    const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    if (auto ap = schema.find("additionalProperties"); ap != schema.end() && ap->is_boolean() && !ap->get<bool>()) {
      std::vector<std::string> known;
      if (props)
        for (const auto& [k, _] : props->items()) known.push_back(k);
      for (const auto& [k, _] : inst.items())
        if (!props || !props->contains(k)) {
          std::string msg = "unknown key '" + k + "'";
          if (auto near = didYouMean(k, known)) msg += " (did you mean '" + *near + "'?)";
          return SchemaError{pointer + "/" + escapePointerToken(k), msg};
        }
    }
    if (auto req = schema.find("required"); req != schema.end())
      for (const auto& k : *req)
        if (!inst.contains(k.get<std::string>()))
          return SchemaError{pointer, "missing required key '" + k.get<std::string>() + "'"};
    if (auto mp = schema.find("minProperties"); mp != schema.end() && inst.size() < mp->get<size_t>())
      return SchemaError{pointer, "needs at least " + std::to_string(mp->get<size_t>()) + " key(s)"};
    if (props)
      for (const auto& [k, sub] : props->items())
        if (inst.contains(k))
          if (auto e = check(sub, doc, inst[k], pointer + "/" + escapePointerToken(k))) return e;
    // A map's values: every key not named under properties meets the value schema.
    if (auto ap = schema.find("additionalProperties"); ap != schema.end() && ap->is_object())
      for (const auto& [k, v] : inst.items())
        if (!props || !props->contains(k))
          if (auto e = check(*ap, doc, v, pointer + "/" + escapePointerToken(k))) return e;
  }
  if (inst.is_array()) {
    if (auto mi = schema.find("minItems"); mi != schema.end() && inst.size() < mi->get<size_t>())
      return SchemaError{pointer, "needs at least " + std::to_string(mi->get<size_t>()) + " item(s)"};
    if (auto mi = schema.find("maxItems"); mi != schema.end() && inst.size() > mi->get<size_t>())
      return SchemaError{pointer, "has more than " + std::to_string(mi->get<size_t>()) + " item(s)"};
    if (auto u = schema.find("uniqueItems"); u != schema.end() && u->get<bool>())
      for (size_t i = 1; i < inst.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (inst[i] == inst[j])
            return SchemaError{pointer + "/" + std::to_string(i),
                               "repeats item " + std::to_string(j) + " (" + inst[i].dump() + ")"};
    if (auto items = schema.find("items"); items != schema.end())
      for (size_t i = 0; i < inst.size(); ++i)
        if (auto e = check(*items, doc, inst[i], pointer + "/" + std::to_string(i))) return e;
  }
  if (inst.is_string()) {
    if (auto ml = schema.find("minLength"); ml != schema.end() && inst.get<std::string>().size() < ml->get<size_t>())
      return SchemaError{pointer, "must not be empty"};
    // __polynomial (libstdc++): linear in the (untrusted) string, no recursion per character.
    if (auto p = schema.find("pattern"); p != schema.end())
      if (!std::regex_search(
              inst.get<std::string>(),
              std::regex(p->get<std::string>(), std::regex::ECMAScript | std::regex_constants::__polynomial)))
        return SchemaError{pointer, "must match the pattern " + p->dump()};
  }
  if (inst.is_number()) {
    double v = inst.get<double>();
    if (auto m = schema.find("minimum"); m != schema.end() && v < m->get<double>())
      return SchemaError{pointer, "must be at least " + m->dump()};
    if (auto m = schema.find("maximum"); m != schema.end() && v > m->get<double>())
      return SchemaError{pointer, "must be at most " + m->dump()};
  }
  return std::nullopt;
}

json SchemaSet::bundle(const std::string& path) const {
  // Other documents become $defs entries named after their file; refs are rewritten to point there.
  json root = docs_.at(path);
  auto defName = [](const std::string& doc) {
    std::string name = doc.substr(doc.rfind('/') + 1);
    return name.substr(0, name.find('.'));
  };
  std::function<void(json&, const std::string&)> rewrite = [&](json& node, const std::string& doc) {
    if (node.is_object()) {
      if (auto ref = node.find("$ref"); ref != node.end() && ref->is_string()) {
        std::string r = ref->get<std::string>();
        size_t hash = r.find('#');
        std::string file = r.substr(0, hash);
        std::string fragment = hash == std::string::npos ? "" : r.substr(hash + 1);
        std::string target = file.empty() ? doc : joinPath(doc, file);
        *ref = target == path ? "#" + fragment : "#/$defs/" + defName(target) + fragment;
      }
      for (auto& [k, v] : node.items()) rewrite(v, doc);
    } else if (node.is_array()) {
      for (auto& v : node) rewrite(v, doc);
    }
  };
  rewrite(root, path);
  for (const auto& [doc, schema] : docs_) {
    if (doc == path) continue;
    json copy = schema;
    copy.erase("$schema");
    copy.erase("$id");
    rewrite(copy, doc);
    root["$defs"][defName(doc)] = std::move(copy);
  }
  return root;
}

}  // namespace graphrw
