#include "target/popart/check.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analysis/attributes.h"
#include "analysis/schemas.h"
#include "fold/fold.h"
#include "target/popart/graphcore_ops.h"
#include "target/popart/placed.h"
#include "target/popart/popart.h"

namespace graphrw::popart {

using namespace ir;

namespace {

constexpr const char* kIpu = kIpuNumber;
constexpr const char* kStage = kPipelineStage;
constexpr int64_t kMaxIr = 6;
constexpr int64_t kMinOpset = 6, kMaxOpset = 11;

Graph* calleeOf(const Node& n) {
  const Attribute* a = n.attribute("callee");
  return a ? a->g() : nullptr;
}

std::string graphName(const Graph& g) { return g.residual().name(); }

// A name-independent text of a callee body: two bodies with the same text
// compute the same thing. Values are numbered in order of appearance; values
// from the enclosing graph keep their names (PopART looks them up by name).
std::string canonical(const Graph& g) {
  std::unordered_map<const Value*, size_t> ids;
  std::string out;
  auto id = [&](const Value* v) -> std::string {
    if (!v) return "_";
    if (v->graph() != &g) return "outer:" + v->name();
    auto [it, fresh] = ids.emplace(v, ids.size());
    return "%" + std::to_string(it->second);
  };
  for (const auto& in : g.inputs()) out += "in " + id(in.value) + ";";
  for (const auto& init : g.initializers()) out += "init " + id(init.value) + ";";
  for (const auto& n : g.nodes()) {
    out += n->domain() + "::" + n->opType() + "(";
    for (const Value* v : n->inputs()) out += id(v) + ",";
    out += ")->(";
    for (const Value* v : n->outputs()) out += id(v) + ",";
    out += ")";
    std::vector<const Attribute*> attrs;
    for (const auto& a : n->attributes()) attrs.push_back(&a);
    std::sort(attrs.begin(), attrs.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
    for (const Attribute* a : attrs) {
      out += "{" + a->proto().SerializeAsString();
      if (a->t()) {
        try {
          HostTensor t = readTensor(*a->t());
          out += "t" + std::to_string(t.type) + ":" + std::to_string(t.dims.size()) + ":" + t.data;
        } catch (const std::exception&) {
          out += "t?" + a->t()->name();
        }
      }
      if (a->g()) out += "[" + canonical(*a->g()) + "]";
      for (const auto& sub : a->graphs()) out += "[" + canonical(*sub) + "]";
      out += "}";
    }
    out += ";";
  }
  for (const auto& o : g.outputs()) out += "out " + id(o.value) + ";";
  return out;
}

// The value of a constant argument as a comparable text; nothing when it is not constant.
std::optional<std::string> constantBytes(const Value* v) {
  if (auto t = constantOf(v)) return contentKey(*t);
  return std::nullopt;
}

std::string describe(const std::optional<std::string>& bytes, const Value* v) {
  if (!bytes) return "'" + (v ? v->name().str() : std::string("<missing>")) + "' (not a constant)";
  return "'" + v->name() + "'";
}

class Checker {
 public:
  Checker(const Model& model, PopartVersion version) : model_(model), version_(version) {}

  std::vector<Finding> run() {
    registerGraphcoreOps();
    checkModel();
    walk(model_.graph(), nullptr);
    checkPlacement();
    checkCallees();
    checkPlacedModel(model_, findings_);
    std::stable_sort(findings_.begin(), findings_.end(),
                     [](const Finding& a, const Finding& b) { return rank(a.check) < rank(b.check); });
    return std::move(findings_);
  }

 private:
  static size_t rank(const std::string& check) {
    const auto& all = findingClasses();
    return static_cast<size_t>(std::find(all.begin(), all.end(), check) - all.begin());
  }

  void add(std::string check, std::string where, std::string message) {
    findings_.push_back({std::move(check), std::move(where), std::move(message)});
  }

  static std::string at(const Node& n) { return nodeLabel(n); }

  void checkModel() {
    if (model_.irVersion() > kMaxIr)
      add("ir-version", "model",
          "IR version " + std::to_string(model_.irVersion()) +
              "; PopART checks models with ONNX 1.6's checker, which accepts IR version 6 at most");
    bool haveOnnx = false;
    for (const auto& [domain, version] : model_.opsetImports()) {
      if (isDefaultDomain(domain)) {
        haveOnnx = true;
        onnxOpset_ = version;
        if (version < kMinOpset || version > kMaxOpset)
          add("opset", "model", "imports ai.onnx opset " + std::to_string(version) + "; PopART takes opsets 6 to 11");
      } else if (domain == "ai.graphcore") {
        if (version != 1)
          add("opset", "model", "imports ai.graphcore opset " + std::to_string(version) + "; PopART has opset 1 only");
      } else {
        add("domain", "model", "imports domain '" + domain + "'; PopART imports only ai.onnx and ai.graphcore");
      }
    }
    if (!haveOnnx) onnxOpset_ = 10;  // PopART's default for a model without an ai.onnx import
    for (const auto& f : model_.functions())
      add("functions", "function " + f->key().str(),
          "a local function; PopART does not support ModelProto.functions (inline it: graphrw expand)");
    // PopART makes tensors of graph.initializer only (willow/src/ir.cpp:2272);
    // nothing in willow/src reads sparse_initializer.
    model_.graph().walkGraphs([&](const Graph& g) {
      for (const auto& s : g.sparseInitializers())
        add("sparse-initializer", "sparse initializer '" + s.value->name() + "'",
            "PopART reads dense initializers only; this one would be a tensor without data (graphrw legalize makes it "
            "dense)");
    });
    for (const auto& in : model_.graph().inputs()) {
      const Value* v = in.value;
      if (v->isInitializer()) continue;
      const onnx::TypeProto* t = v->type();
      if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) {
        add("dynamic-shape", "graph input '" + v->name() + "'", "has no shape; PopART needs static input shapes");
        continue;
      }
      const auto& shape = t->tensor_type().shape();
      for (int d = 0; d < shape.dim_size(); ++d) {
        if (shape.dim(d).has_dim_value() && shape.dim(d).dim_value() > 0) continue;
        std::string what = shape.dim(d).has_dim_param() ? "'" + shape.dim(d).dim_param() + "'" : "unknown";
        add("dynamic-shape", "graph input '" + v->name() + "'",
            "dimension " + std::to_string(d) + " is " + what +
                "; PopART needs static input shapes (graphrw set-shapes --input " + v->name() + "=...)");
      }
    }
  }

  // Long: one case per kind of op (ai.onnx, ai.graphcore and its Call, other domains), each with its findings.
  void checkOp(const Node& n) {
    const std::string& domain = n.domain();
    if (isDefaultDomain(domain)) {
      const onnx::OpSchema* s = findSchema(n.opType(), static_cast<int>(onnxOpset_), "");
      int since = s ? s->since_version() : 0;
      auto support = importSupport("", n.opType(), static_cast<int>(onnxOpset_), since);
      // Out of PopART's opset range every op's version is off, which the opset
      // finding says once: only ops PopART lacks at any version are listed.
      bool outOfRange = onnxOpset_ < kMinOpset || onnxOpset_ > kMaxOpset;
      if (!support.supported && outOfRange && hasOp("", n.opType())) return;
      if (!support.supported) {
        std::string why = support.reason;
        if (model_.findFunction(domain, n.opType(), n.overload())) why = "a call of a local function; " + why;
        add("op", at(n), why);
      }
      return;
    }
    if (model_.findFunction(domain, n.opType(), n.overload())) {
      add("op", at(n), "calls local function " + domain + "::" + n.opType() + "; PopART has no such op (inline it)");
      return;
    }
    auto support = importSupport(domain, n.opType(), 1, 1);
    if (!support.supported) {
      add("op", at(n), support.reason);
      return;
    }
    if (domain != "ai.graphcore") return;
    if (auto since = graphcoreOpSince(n.opType()); since && *since > version_)
      add("op-version", at(n),
          "ai.graphcore::" + n.opType() + " exists from PopART " + since->str() + " on; the target is PopART " +
              version_.str() +
              (n.opType() == "GeluErf" ? " (legalize --popart-version " + version_.str() +
                                             " writes the erf GELU with ai.onnx ops, --gelu tanh as ai.graphcore::Gelu)"
                                       : ""));
    const onnx::OpSchema* s = findSchema(n.opType(), 1, "ai.graphcore");
    if (!s) return;  // PopART has it, graphrw has no data about it
    auto count = [](const std::vector<Value*>& vs) {
      size_t last = 0;
      for (size_t i = 0; i < vs.size(); ++i)
        if (vs[i]) last = i + 1;
      return static_cast<int>(last);
    };
    int ins = count(n.inputs()), outs = static_cast<int>(n.outputs().size());
    if (ins < s->min_input() || ins > s->max_input())
      add("graphcore-op", at(n),
          "has " + std::to_string(ins) + " inputs; ai.graphcore::" + n.opType() + " takes " +
              std::to_string(s->min_input()) +
              (s->max_input() == s->min_input() ? "" : " to " + std::to_string(s->max_input())));
    if (outs < s->min_output() || outs > s->max_output())
      add("graphcore-op", at(n),
          "has " + std::to_string(outs) + " outputs; ai.graphcore::" + n.opType() + " has " +
              std::to_string(s->min_output()) +
              (s->max_output() == s->min_output() ? "" : " to " + std::to_string(s->max_output())));
    for (const auto& [name, spec] : s->attributes()) {
      const Attribute* a = n.attribute(name);
      if (!a) {
        if (spec.required)
          add("graphcore-op", at(n),
              "lacks attribute '" + name + "' (" + attributeTypeName(spec.type) + "), which PopART's factory requires");
        continue;
      }
      if (a->type() != spec.type)
        add("graphcore-op", at(n),
            "attribute '" + name + "' is " + attributeTypeName(a->type()) + "; PopART reads it as " +
                attributeTypeName(spec.type));
    }
    for (const auto& a : n.attributes())
      if (!a.name().starts_with("__") && !s->attributes().count(a.name()))
        add("graphcore-op", at(n), "attribute '" + a.name() + "' is not one ai.graphcore::" + n.opType() + " has");
    if (n.opType() == "Call") {
      const Graph* callee = calleeOf(n);
      if (callee && static_cast<int>(callee->outputs().size()) != outs)
        add("graphcore-op", at(n),
            "has " + std::to_string(outs) + " outputs but its callee has " + std::to_string(callee->outputs().size()));
      if (callee && static_cast<int>(callee->inputs().size()) != ins)
        add("graphcore-op", at(n),
            "has " + std::to_string(ins) + " inputs but its callee has " + std::to_string(callee->inputs().size()));
      if (auto k = intAttr(n, "num_outputs"); k && *k != outs)
        add("graphcore-op", at(n),
            "num_outputs is " + std::to_string(*k) + " but the node has " + std::to_string(outs));
    }
  }

  // `callee`: the Call whose body `g` is (nullptr in the main graph and If/Loop bodies).
  void walk(const Graph& g, const Node* callee) {
    for (const auto& np : g.nodes()) {
      const Node& n = *np;
      checkOp(n);
      for (auto& p : checkNodeAttributes(n)) add("attribute", at(n), p);
      if (callee) {
        if (n.attribute(kRecomputeAttribute))
          add("callee-checkpoint", at(n),
              "sets " + std::string(kRecomputeAttribute) + " inside callee '" + graphName(*calleeOf(*callee)) +
                  "'; PopART lowers callee ops without reading it (checkpoint the Call's outputs instead)");
        calleeNodes_[graphName(*calleeOf(*callee))].push_back(&n);
      } else if (&g == &model_.graph()) {
        mainNodes_.push_back(&n);
      }
      if (isCall(n)) {
        if (const Graph* body = calleeOf(n)) {
          calls_.push_back(&n);
          // Calls sharing a callee name carry copies of one body (checkCallees
          // compares them): its ops are checked once.
          if (walkedCallees_.insert(graphName(*body)).second) walk(*body, &n);
        }
        continue;
      }
      n.forEachSubgraph([&](const Graph& sub) { walk(sub, callee); });
    }
  }

  // Nodes PopART evaluates at import: Constant, Shape, ConstantOfShape, and
  // nodes computing only from those (its const-expression folding).
  std::unordered_set<const Node*> foldedNodes() const {
    std::unordered_set<const Node*> folded;
    for (const Node* n : mainNodes_) {
      bool yes = foldedAtImport(n->opType()) && isDefaultDomain(n->domain());
      if (!yes && !n->inputs().empty() && !isCall(*n)) {
        yes = true;
        for (const Value* v : n->inputs())
          if (v && !(v->producer() && folded.count(v->producer()))) yes = false;
      }
      if (yes) folded.insert(n);
    }
    return folded;
  }

  void checkPlacement() {
    auto folded = foldedNodes();
    for (const char* key : {kIpu, kStage}) {
      std::vector<const Node*> with, without;
      for (const Node* n : mainNodes_) {
        if (folded.count(n)) continue;
        (n->attribute(key) ? with : without).push_back(n);
      }
      if (with.empty() || without.empty()) continue;
      for (const Node* n : without)
        add("placement", at(*n),
            "has no " + std::string(key) + " while " + std::to_string(with.size()) +
                " other ops have one; PopART needs it on all ops or none (e.g. " + nodeLabel(*with.front()) + ")");
    }
    // Stages: one IPU each, contiguous from 0, never decreasing along the data.
    std::map<int64_t, std::map<int64_t, const Node*>> ipusOfStage;
    std::set<int64_t> stages;
    for (const Node* n : mainNodes_) {
      auto stage = intAttr(*n, kStage);
      if (!stage) continue;
      stages.insert(*stage);
      if (auto ipu = intAttr(*n, kIpu)) ipusOfStage[*stage].emplace(*ipu, n);
      for (const Value* v : n->inputs()) {
        if (!v || !v->producer()) continue;
        auto from = intAttr(*v->producer(), kStage);
        if (from && *from > *stage)
          add("stage-order", at(*n),
              "is in pipeline stage " + std::to_string(*stage) + " but reads '" + v->name() + "' from " +
                  nodeLabel(*v->producer()) + " in the later stage " + std::to_string(*from));
      }
    }
    for (const auto& [stage, ipus] : ipusOfStage) {
      if (ipus.size() < 2) continue;
      std::string list;
      for (const auto& [ipu, n] : ipus)
        list += (list.empty() ? "" : ", ") + std::to_string(ipu) + " (" + nodeLabel(*n) + ")";
      add("stage-ipu", "pipeline stage " + std::to_string(stage),
          "is on IPUs " + list + "; PopART needs one IPU per stage");
    }
    int64_t expect = 0;
    for (int64_t s : stages) {
      if (s != expect) {
        add("stage-order", "pipeline stage " + std::to_string(s),
            "stages are not contiguous from 0: stage " + std::to_string(expect) + " has no op");
        break;
      }
      ++expect;
    }
    // Ops inside a callee run where their Call runs.
    for (const Node* call : calls_) {
      for (const char* key : {kIpu, kStage}) {
        auto want = intAttr(*call, key);
        if (!want) continue;
        for (const Node* n : calleeNodes_[graphName(*calleeOf(*call))]) {
          auto have = intAttr(*n, key);
          if (have == want) continue;
          add("callee-placement", at(*n),
              std::string(have ? "has " + std::string(key) + " " + std::to_string(*have)
                               : "has no " + std::string(key)) +
                  " inside callee '" + graphName(*calleeOf(*call)) + "' called by " + nodeLabel(*call) + " with " +
                  std::to_string(*want));
        }
      }
    }
  }

  void checkCallees() {
    std::map<std::string, std::vector<const Node*>> byName;
    for (const Node* call : calls_) {
      const Graph& body = *calleeOf(*call);
      if (graphName(body).empty()) {
        add("callee-name", at(*call), "its callee has no name; PopART identifies callees by name");
        continue;
      }
      byName[graphName(body)].push_back(call);
    }
    for (const auto& [name, calls] : byName) {
      const Graph& first = *calleeOf(*calls.front());
      if (!first.initializers().empty())
        add("callee-initializer", "callee '" + name + "'",
            "has " + std::to_string(first.initializers().size()) + " initializers (first '" +
                first.initializers().front().value->name() +
                "'); PopART does not support callee initializers: pass weights as Call inputs");
      std::string text = canonical(first);
      for (size_t i = 1; i < calls.size(); ++i) {
        if (canonical(*calleeOf(*calls[i])) == text) continue;
        add("callee-name", at(*calls[i]),
            "calls a body named '" + name + "' that differs from the one " + nodeLabel(*calls.front()) +
                " calls; PopART builds the first and silently uses it for both");
      }
      if (calls.size() < 2) continue;
      // Callee inputs whose values shape an op must be equal at every call site.
      for (size_t i = 0; i < first.inputs().size(); ++i) {
        const Value* formal = first.inputs()[i].value;
        const Node* user = nullptr;
        for (const auto& use : formal->uses())
          if (popart::shapeLikeOperand(*use.node, use.index)) user = use.node;
        if (!user) continue;
        const Value* firstArg = calls.front()->input(i);
        auto firstBytes = constantBytes(firstArg);
        for (size_t c = 1; c < calls.size(); ++c) {
          const Value* arg = calls[c]->input(i);
          auto bytes = constantBytes(arg);
          if (firstBytes && bytes && *firstBytes == *bytes) continue;
          if (arg == firstArg) continue;
          add("callee-shape-operand", at(*calls[c]),
              "passes " + describe(bytes, arg) + " as input " + std::to_string(i) + " of callee '" + name +
                  "', which " + nodeLabel(*user) + " reads as a shape-like operand; the first call " +
                  nodeLabel(*calls.front()) + " passes " + describe(firstBytes, firstArg) +
                  " and PopART builds the callee with the first call's values");
        }
      }
    }
  }

  const Model& model_;
  PopartVersion version_;
  int64_t onnxOpset_ = 10;
  std::vector<Finding> findings_;
  std::vector<const Node*> mainNodes_;
  std::vector<const Node*> calls_;
  std::unordered_map<std::string, std::vector<const Node*>> calleeNodes_;  // by callee name
  std::set<std::string> walkedCallees_;
};

}  // namespace

const std::vector<std::string>& findingClasses() {
  static const std::vector<std::string> classes = {"ir-version",
                                                   "opset",
                                                   "domain",
                                                   "functions",
                                                   "sparse-initializer",
                                                   "dynamic-shape",
                                                   "op",
                                                   "graphcore-op",
                                                   "op-version",
                                                   "attribute",
                                                   "groupnorm-params",
                                                   "placement",
                                                   "stage-ipu",
                                                   "stage-order",
                                                   "weight-ipus",
                                                   "pipeline-recompute",
                                                   "callee-placement",
                                                   "callee-name",
                                                   "callee-initializer",
                                                   "callee-checkpoint",
                                                   "callee-shape-operand",
                                                   "shape-operand"};
  return classes;
}

std::vector<Finding> checkImport(const Model& model, PopartVersion version) { return Checker(model, version).run(); }

}  // namespace graphrw::popart
