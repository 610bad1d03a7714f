#include "driver/inspect.h"

#include <map>
#include <sstream>

#include "analysis/types.h"
#include "support/external_data.h"
#include "target/popart/popart.h"

namespace graphrw {

using namespace ir;
using nlohmann::json;

namespace {

struct Counts {
  std::map<std::pair<std::string, std::string>, size_t> ops;  // (domain, op) -> count
  std::map<FunctionKey, size_t> calls;
  std::map<std::pair<std::string, std::string>, size_t> popart;  // (name, type) -> count
  size_t nodes = 0;
  json checkpoints = json::array();  // {"node", "value"}
  size_t recompute = 0;
  std::map<int64_t, size_t> perStage, perIpu;  // ops per __pipeline_stage / __ipu_number

  void add(const Counts& o) {
    for (const auto& [k, n] : o.ops) ops[k] += n;
    for (const auto& [k, n] : o.calls) calls[k] += n;
    for (const auto& [k, n] : o.popart) popart[k] += n;
    nodes += o.nodes;
    recompute += o.recompute;
    for (const auto& [k, n] : o.perStage) perStage[k] += n;
    for (const auto& [k, n] : o.perIpu) perIpu[k] += n;
  }
};

// The nodes of one graph, its subgraphs not included.
Counts countNodes(const Model& model, const Graph& g) {
  Counts c;
  for (const auto& n : g.nodes()) {
    c.nodes++;
    c.ops[{domainShown(n->domain()), n->opType()}]++;
    if (model.findFunction(n->domain(), n->opType(), n->overload()))
      c.calls[{n->domain(), n->opType(), n->overload()}]++;
    for (const auto& a : n->attributes())
      if (a.name().starts_with("__")) c.popart[{a.name(), attributeTypeName(a.type())}]++;
    for (auto [key, counts] : {std::pair{"__pipeline_stage", &c.perStage}, {"__ipu_number", &c.perIpu}})
      if (const Attribute* a = n->attribute(key); a && a->type() == onnx::AttributeProto::INT)
        (*counts)[a->proto().i()]++;
    if (popart::isCheckpoint(*n))
      c.checkpoints.push_back({{"node", n->name().str()}, {"value", n->input(0) ? n->input(0)->name().str() : ""}});
    else if (popart::recomputeType(*n) == popart::kRecompute)
      c.recompute++;
  }
  return c;
}

// One graph of the model as inspect lists it: the main graph, a function
// body, a Call's callee (once per callee name, however many Calls carry a
// copy: PopART builds it once) or another subgraph (If/Loop/Scan bodies).
struct GraphEntry {
  std::string kind, name;
  Counts counts;
  size_t calls = 0;  // callees: the Calls that carry it
};

class GraphLister {
 public:
  explicit GraphLister(const Model& model) : model_(model) {}
  std::vector<GraphEntry> entries;
  size_t subgraphs = 0;  // every subgraph attribute, copies of a callee included

  void visit(const Graph& g, std::string kind, std::string name) {
    entries.push_back({std::move(kind), std::move(name), countNodes(model_, g), 0});
    for (const auto& n : g.nodes())
      for (const auto& a : n->attributes()) {
        std::vector<const Graph*> subs;
        if (a.g()) subs.push_back(a.g());
        for (const auto& sub : a.graphs()) subs.push_back(sub.get());
        for (const Graph* sub : subs) {
          subgraphs++;
          bool callee = popart::isCall(*n) && a.name() == "callee";
          if (callee) {
            std::string calleeName = sub->residual().name();
            if (auto it = callees_.find(calleeName); it != callees_.end()) {
              entries[it->second].calls++;
              continue;
            }
            callees_[calleeName] = entries.size();
            visit(*sub, "callee", calleeName);
            entries[callees_[calleeName]].calls = 1;
          } else {
            visit(*sub, "subgraph", (n->name().empty() ? n->opType() : n->name().str()) + "/" + a.name());
          }
        }
      }
  }

 private:
  const Model& model_;
  std::map<std::string, size_t> callees_;  // callee name -> index in entries
};

json opList(const Counts& c) {
  json ops = json::array();
  for (const auto& [key, count] : c.ops)
    ops.push_back({{"domain", key.first}, {"op_type", key.second}, {"count", count}});
  return ops;
}

json valueList(const std::vector<ValueInfo>& list) {
  json out = json::array();
  for (const auto& vi : list) out.push_back({{"name", vi.value->name()}, {"type", typeString(vi.value->type())}});
  return out;
}

}  // namespace

// Long: one section of the summary after another (model, opsets, ops, functions, weights, PopART).
json inspectModel(Model& model) {
  const auto& r = model.residual();
  json j;
  j["ir_version"] = r.ir_version();
  j["producer"] = {{"name", r.producer_name()}, {"version", r.producer_version()}};
  j["domain"] = r.domain();
  j["model_version"] = r.model_version();
  json opsets = json::array();
  for (const auto& op : r.opset_import())
    opsets.push_back({{"domain", domainShown(op.domain())}, {"version", op.version()}});
  j["opset_import"] = opsets;

  Graph& g = model.graph();
  GraphLister lister(model);
  lister.visit(g, "main", g.residual().name());
  size_t inMain = 0;  // nodes of the main graph and of the subgraphs under it, every callee copy included
  model.graph().walkGraphs([&](Graph& sub) { inMain += sub.nodeCount(); });
  const size_t mainSubgraphs = lister.subgraphs;
  for (const auto& f : model.functions()) lister.visit(f->body(), "function", f->key().str());

  // Totals over every graph: each callee once, however many Calls carry it.
  Counts all;
  json checkpoints = json::array(), graphs = json::array();
  for (const auto& e : lister.entries) {
    all.add(e.counts);
    for (const auto& cp : e.counts.checkpoints) {
      json entry = cp;
      if (e.kind != "main") entry[e.kind] = e.name;
      checkpoints.push_back(entry);
    }
    json ge = {{"kind", e.kind}, {"name", e.name}, {"nodes", e.counts.nodes}, {"ops", opList(e.counts)}};
    if (e.kind == "callee") ge["calls"] = e.calls;
    graphs.push_back(ge);
  }
  j["graph"] = {{"name", g.residual().name()}, {"inputs", valueList(g.inputs())}, {"outputs", valueList(g.outputs())},
                {"nodes", g.nodeCount()},      {"nodes_with_subgraphs", inMain},  {"subgraphs", mainSubgraphs}};
  j["ops"] = opList(all);
  j["graphs"] = graphs;

  json functions = json::array();
  for (const auto& f : model.functions())
    functions.push_back({{"domain", f->key().domain},
                         {"name", f->key().name},
                         {"overload", f->key().overload},
                         {"nodes", f->body().nodeCount()},
                         {"calls", all.calls[f->key()]}});
  j["functions"] = functions;
  const auto& popart = all.popart;

  size_t count = 0;
  uint64_t bytes = 0;
  std::map<std::string, std::pair<size_t, uint64_t>> external;
  model.walkGraphs([&](Graph& graph) {
    for (const auto& init : graph.initializers()) {
      const Tensor& t = *init.tensor;
      count++;
      uint64_t b = t.storedBytes();
      bytes += b;
      if (t.isExternal()) {
        auto& e = external[parseExternalRef(t.proto()).location];
        e.first++;
        e.second += b;
      }
    }
  });
  json ext = json::array();
  for (const auto& [loc, e] : external) ext.push_back({{"location", loc}, {"tensors", e.first}, {"bytes", e.second}});
  j["initializers"] = {{"count", count}, {"bytes", bytes}};
  j["external_data"] = ext;
  json pa = json::array();
  for (const auto& [key, n] : popart) pa.push_back({{"name", key.first}, {"type", key.second}, {"count", n}});
  j["popart_attributes"] = pa;
  j["recomputation"] = {{"checkpoints", checkpoints}, {"recompute_marked", all.recompute}};
  json stages = json::object(), ipus = json::object();
  for (const auto& [s, n] : all.perStage) stages[std::to_string(s)] = n;
  for (const auto& [i, n] : all.perIpu) ipus[std::to_string(i)] = n;
  j["placement"] = {{"nodes_per_stage", stages}, {"nodes_per_ipu", ipus}};
  return j;
}

std::string renderInspection(const json& j) {
  std::ostringstream os;
  os << "ir_version: " << j["ir_version"].get<int64_t>() << "\n";
  os << "producer: " << j["producer"]["name"].get<std::string>() << " " << j["producer"]["version"].get<std::string>()
     << "\n";
  os << "opset_import:";
  for (const auto& op : j["opset_import"])
    os << " " << op["domain"].get<std::string>() << "=" << op["version"].get<int64_t>();
  os << "\n";
  const auto& g = j["graph"];
  os << "graph '" << g["name"].get<std::string>() << "': " << g["nodes"].get<size_t>() << " nodes ("
     << g["nodes_with_subgraphs"].get<size_t>() << " with " << g["subgraphs"].get<size_t>() << " subgraphs)\n";
  for (const char* side : {"inputs", "outputs"})
    for (const auto& v : g[side])
      os << "  " << (side[0] == 'i' ? "input  " : "output ") << v["name"].get<std::string>() << ": "
         << v["type"].get<std::string>() << "\n";
  size_t functions = 0, callees = 0, subgraphs = 0;
  for (const auto& e : j["graphs"]) {
    const std::string kind = e["kind"].get<std::string>();
    functions += kind == "function";
    callees += kind == "callee";
    subgraphs += kind == "subgraph";
  }
  auto some = [](size_t n, const char* one, const char* many) {
    return n == 0 ? std::string() : ", " + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  os << "ops (main graph" << some(functions, "function body", "function bodies")
     << some(callees, "callee", "callees (each once)") << some(subgraphs, "subgraph", "subgraphs") << "):\n";
  for (const auto& op : j["ops"])
    os << "  " << op["count"].get<size_t>() << "\t" << op["domain"].get<std::string>()
       << "::" << op["op_type"].get<std::string>() << "\n";
  os << "functions: " << j["functions"].size() << "\n";
  for (const auto& f : j["functions"]) {
    os << "  " << f["domain"].get<std::string>() << "::" << f["name"].get<std::string>();
    if (!f["overload"].get<std::string>().empty()) os << ":" << f["overload"].get<std::string>();
    os << "  " << f["nodes"].get<size_t>() << " nodes, " << f["calls"].get<size_t>() << " calls\n";
  }
  os << "initializers: " << j["initializers"]["count"].get<size_t>() << " ("
     << j["initializers"]["bytes"].get<uint64_t>() << " bytes)\n";
  for (const auto& e : j["external_data"])
    os << "  external " << e["location"].get<std::string>() << ": " << e["tensors"].get<size_t>() << " tensors, "
       << e["bytes"].get<uint64_t>() << " bytes\n";
  os << "popart attributes: " << j["popart_attributes"].size() << "\n";
  for (const auto& a : j["popart_attributes"])
    os << "  " << a["name"].get<std::string>() << " (" << a["type"].get<std::string>()
       << "): " << a["count"].get<size_t>() << "\n";
  const auto& rc = j["recomputation"];
  os << "checkpoints: " << rc["checkpoints"].size() << "\n";
  for (const auto& cp : rc["checkpoints"]) {
    std::vector<std::string> where;
    if (!cp["node"].get<std::string>().empty()) where.push_back("node " + cp["node"].get<std::string>());
    for (const char* kind : {"function", "callee", "subgraph"})
      if (cp.contains(kind)) where.push_back(std::string("in ") + kind + " " + cp[kind].get<std::string>());
    os << "  " << cp["value"].get<std::string>();
    for (size_t i = 0; i < where.size(); ++i) os << (i ? ", " : " (") << where[i];
    os << (where.empty() ? "" : ")") << "\n";
  }
  os << "recompute marks: " << rc["recompute_marked"].get<size_t>() << "\n";
  const auto& pl = j["placement"];
  if (!pl["nodes_per_stage"].empty() || !pl["nodes_per_ipu"].empty()) {
    os << "placement:\n";
    auto numeric = [](const json& counts) {  // JSON orders keys as text: "10" before "2"
      std::map<int64_t, size_t> m;
      for (const auto& [k, n] : counts.items()) m[std::stoll(k)] = n.get<size_t>();
      return m;
    };
    for (const auto& [s, n] : numeric(pl["nodes_per_stage"])) os << "  stage " << s << ": " << n << " nodes\n";
    for (const auto& [i, n] : numeric(pl["nodes_per_ipu"])) os << "  ipu " << i << ": " << n << " nodes\n";
  }
  return os.str();
}

}  // namespace graphrw
