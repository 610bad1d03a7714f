#include "passes/popart/legalize/legalize_training.h"

#include <set>
#include <string_view>

#include "analysis/types.h"
#include "fold/fold.h"
#include "support/error.h"
#include "support/text_file.h"
#include "target/popart/popart.h"

namespace graphrw::passes::legalize_detail {

using namespace ir;

namespace {

bool isRead(const Value* v) { return v && (!v->uses().empty() || v->graphOutputCount() > 0); }

bool isOnnxOp(const Node& n, const char* op) { return isDefaultDomain(n.domain()) && n.opType() == op; }

// A one-element constant as a double; nothing when `v` is not one.
std::optional<double> scalarOf(const Value* v) {
  auto t = constantOf(v);
  return t ? t->scalar() : std::nullopt;
}

template <typename F>
void eachNode(Model& model, F&& f) {
  std::vector<Node*> nodes;
  model.graph().walkGraphs([&](Graph& g) {
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
  });
  for (Node* n : nodes) f(n);
}

void bypass(Rewriter& rw, Node* n) {
  rw.replaceAllUsesWith(n->output(0), n->input(0));
  rw.eraseNode(n);
}

}  // namespace

ParameterSnapshot::Entry ParameterSnapshot::entryOf(const Value& v) {
  const Tensor& t = *v.initializer();
  Entry e{t.dataType(), t.dims(), 0, std::nullopt, 0, isRead(&v)};
  if (t.rawView() || t.isExternal()) {
    // Weights are views of the mapped input: neither copied nor read here.
    e.view = t.rawView() ? *t.rawView() : t.externalBytes();
    e.bytes = e.view->size;
    return e;
  }
  HostTensor host = readTensor(t);  // small: held in the TensorProto's fields
  e.bytes = host.data.size();
  e.hash = std::hash<std::string_view>{}(host.data);
  return e;
}

bool ParameterSnapshot::sameValues(const Entry& was, const Entry& now) {
  if (was.bytes != now.bytes) return false;
  if (was.view && now.view) {
    if (was.view->data == now.view->data) return true;  // the same bytes of the input
    return std::memcmp(was.view->data, now.view->data, was.bytes) == 0;
  }
  if (was.view) return std::hash<std::string_view>{}(was.view->view()) == now.hash;
  if (now.view) return std::hash<std::string_view>{}(now.view->view()) == was.hash;
  return was.hash == now.hash;
}

ParameterSnapshot ParameterSnapshot::of(const Model& model) {
  ParameterSnapshot s;
  for (const auto& v : model.graph().values()) {
    if (!v->isInitializer()) continue;
    // A Dropout's ratio or training_mode is no parameter: below opset 12 it
    // becomes the ratio attribute (or the session's mode), and nothing trains it.
    bool dropoutSetting = !v->uses().empty() && !v->isGraphInput() && v->graphOutputCount() == 0;
    for (const auto& u : v->uses()) dropoutSetting &= isOnnxOp(*u.node, "Dropout") && u.index >= 1;
    if (!dropoutSetting) s.entries_.emplace(v->name(), entryOf(*v));
  }
  return s;
}

nlohmann::json ParameterSnapshot::check(const Model& model) const {
  std::map<std::string, const Value*> now;
  for (const auto& v : model.graph().values())
    if (v->isInitializer()) now.emplace(v->name(), v.get());
  uint64_t bytes = 0;
  for (const auto& [name, was] : entries_) {
    auto it = now.find(name);
    std::string why;
    if (it == now.end()) {
      why = "is gone";
    } else {
      Entry e = entryOf(*it->second);
      if (e.type != was.type || e.dims != was.dims)
        why = "changed its type or shape";
      else if (!sameValues(was, e))
        why = "changed its values";
      else if (was.read && !e.read)
        why = "is no longer read";
    }
    if (!why.empty())
      fail(ExitCode::Internal, "legalize: parameter '" + name + "' " + why +
                                   " in training mode (a graphrw defect: training mode keeps every initializer)");
    bytes += was.bytes;
  }
  return {{"count", entries_.size()}, {"bytes", bytes}};
}

size_t removeIdentityDropouts(Rewriter& rw, Model& model, bool inference) {
  size_t removed = 0;
  eachNode(model, [&](Node* n) {
    if (!isOnnxOp(*n, "Dropout") || !n->input(0) || !n->output(0) || n->output(0)->graphOutputCount() > 0) return;
    if (n->outputs().size() > 1 && isRead(n->output(1))) return;
    // Before opset 12 the ratio is an attribute and training is the session's.
    bool identity = false;
    if (inference) {
      // An inference session drops nothing, whatever the export's training_mode
      // (PopART applies Dropout in training sessions only); a training_mode fed
      // by a graph input is the user's to set, and stays.
      identity = !(n->input(2) && n->input(2)->isGraphInput());
    } else if (model.opsetVersion("").value_or(12) >= 12) {
      auto training = n->input(2) ? scalarOf(n->input(2)) : std::optional<double>(0.0);
      auto ratio = n->input(1) ? scalarOf(n->input(1)) : std::optional<double>(0.5);
      identity = (training && *training == 0.0) || (ratio && *ratio == 0.0);
    } else if (const Attribute* a = n->attribute("ratio")) {
      identity = a->proto().f() == 0.0f;
    }
    if (!identity) return;
    bypass(rw, n);
    removed++;
  });
  return removed;
}

size_t removeNoopShapeOps(Rewriter& rw, Model& model) {
  size_t removed = 0;
  std::set<Node*> shapes;  // erased after the walk, which holds pointers to them
  eachNode(model, [&](Node* n) {
    if (!(isOnnxOp(*n, "Reshape") || isOnnxOp(*n, "Expand")) || !n->input(0) || !n->output(0)) return;
    if (n->output(0)->graphOutputCount() > 0 || !constantOf(n->input(1))) return;
    auto in = staticShape(n->input(0)), out = staticShape(n->output(0));
    if (!in || !out || *in != *out) return;
    if (Node* p = n->input(1)->producer(); p && isOnnxOp(*p, "Constant")) shapes.insert(p);
    bypass(rw, n);
    removed++;
  });
  for (Node* p : shapes)
    if (!isRead(p->output(0))) rw.eraseNode(p);
  return removed;
}

std::set<std::string> readParameterNames(const std::string& file) {
  std::string text = readTextFile(file, "parameter list");
  std::set<std::string> names;
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && text[start] == '[') {
    nlohmann::json list;
    try {
      list = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      usageError(file + ": not a JSON list of names: " + e.what());
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) usageError(file + ": entry " + std::to_string(i) + " is not a name (a string)");
      names.insert(list[i].get<std::string>());
    }
    return names;
  }
  size_t lineNo = 0, at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    ++lineNo;
    at = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    if (line.find_first_of(" \t") != std::string::npos)
      usageError(file + ":" + std::to_string(lineNo) + ": '" + line + "' is not one name (one name a line)");
    names.insert(line);
  }
  return names;
}

namespace {

// BatchNormalization's running mean and variance: statistics, not parameters.
bool runningStatistic(const Value& v) {
  for (const auto& u : v.uses())
    if (isOnnxOp(*u.node, "BatchNormalization") && (u.index == 3 || u.index == 4)) return true;
  return false;
}

}  // namespace

MadeConstant constantBuffers(Rewriter& rw, Model& model, const std::set<std::string>* parameters,
                             const std::string& file) {
  Graph& g = model.graph();
  if (parameters)
    for (const auto& name : *parameters) {
      const Value* v = g.findLocal(name);
      if (!v || !v->isInitializer())
        usageError("legalize: " + file + " names '" + name + "', which is no initializer of the model's graph");
    }
  std::vector<Value*> buffers;
  MadeConstant made;
  for (const auto& init : g.initializers()) {
    Value* v = init.value;
    if (v->isGraphInput() || !isRead(v)) continue;
    bool floating = popart::isFloatingPoint(init.tensor->dataType());
    if (floating && (!parameters || parameters->count(v->name().str()) || runningStatistic(*v))) continue;
    buffers.push_back(v);
    (floating ? made.floating : made.integer).push_back(v->name().str());
  }
  for (Value* v : buffers) rw.initializerToConstant(v);
  return made;
}

std::vector<std::string> freezeParameters(Rewriter& rw, Model& model, const SelectorSet& frozen) {
  std::vector<Value*> chosen;
  std::vector<bool> used(frozen.any.size(), false);
  for (const auto& init : model.graph().initializers()) {
    Value* v = init.value;
    if (v->isGraphInput() || !isRead(v) || !popart::isFloatingPoint(init.tensor->dataType()) || runningStatistic(*v))
      continue;
    bool hit = false;
    for (size_t i = 0; i < frozen.any.size(); ++i)
      if (frozen.any[i].matchesName(v->name().str())) used[i] = hit = true;
    if (hit) chosen.push_back(v);
  }
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i])
      usageError("legalize: --frozen '" + frozen.any[i].str() +
                 "' matched no parameter (it selects float initializers by name, name_regex or scope)");
  std::vector<std::string> names;
  for (Value* v : chosen) {
    names.push_back(v->name().str());
    rw.initializerToConstant(v);
  }
  return names;
}

}  // namespace graphrw::passes::legalize_detail
