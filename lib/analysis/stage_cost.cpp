#include "analysis/stage_cost.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "analysis/popart.h"
#include "analysis/types.h"
#include "ir/rewriter.h"
#include "support/error.h"

namespace graphrw::stage_cost {

using namespace ir;
using json = nlohmann::json;

std::optional<Optimizer> parseOptimizer(const std::string& name) {
  static const std::map<std::string, Optimizer> names = {{"none", Optimizer::None},
                                                         {"sgd", Optimizer::Sgd},
                                                         {"momentum", Optimizer::Momentum},
                                                         {"adam", Optimizer::Adam},
                                                         {"lamb", Optimizer::Lamb}};
  auto it = names.find(name);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

const char* optimizerName(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return "sgd";
    case Optimizer::Momentum: return "momentum";
    case Optimizer::Adam: return "adam";
    case Optimizer::Lamb: return "lamb";
    case Optimizer::None: break;
  }
  return "none";
}

int stateTensorsPerWeight(Optimizer o) {
  switch (o) {
    case Optimizer::Sgd: return 1;
    case Optimizer::Momentum: return 2;
    case Optimizer::Adam:
    case Optimizer::Lamb: return 3;
    case Optimizer::None: break;
  }
  return 0;
}

uint64_t parseBytes(const std::string& text, const std::string& what) {
  auto bad = [&]() -> uint64_t {
    usageError(what + ": '" + text + "' is not a size (a number of bytes, or with KB, MB, GB, KiB, MiB or GiB)");
  };
  size_t end = 0;
  double number = 0;
  try {
    number = std::stod(text, &end);
  } catch (const std::exception&) {
    return bad();
  }
  static const std::map<std::string, double> units = {{"", 1},         {"B", 1},           {"KB", 1e3},
                                                      {"MB", 1e6},     {"GB", 1e9},        {"KiB", 1024.0},
                                                      {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  auto unit = units.find(text.substr(end));
  if (unit == units.end() || !(number > 0) || !std::isfinite(number) || !std::isdigit(static_cast<unsigned char>(text[0])))
    return bad();
  double bytes = std::round(number * unit->second);
  if (bytes < 1 || bytes > 9.0e18) return bad();
  return static_cast<uint64_t>(bytes);
}

namespace {

uint64_t product(const std::vector<int64_t>& dims) {
  uint64_t c = 1;
  for (int64_t d : dims) c *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return c;
}

int64_t intAttribute(const Node& n, std::string_view name, int64_t fallback) {
  const Attribute* a = n.attribute(name);
  return a ? a->proto().i() : fallback;
}

std::optional<std::vector<int64_t>> shapeOf(const Value* v) { return v ? staticShape(v) : std::nullopt; }

std::optional<uint64_t> valueBytes(const Value* v) {
  auto shape = shapeOf(v);
  if (!shape || !v->type() || !v->type()->has_tensor_type()) return std::nullopt;
  size_t element = elementSize(v->type()->tensor_type().elem_type());
  if (!element) return std::nullopt;
  return product(*shape) * element;
}

bool isFloating(int32_t type) {
  return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::BFLOAT16 || type == onnx::TensorProto::DOUBLE;
}

}  // namespace

namespace {

// "layer.3", "layers_12", "h.0", "3": a numbered component. After '_' only
// for a lowercase name: "Mul_1" is PyTorch numbering an op, not a module.
bool indexed(std::string_view c) {
  size_t i = c.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(c[i - 1]))) --i;
  if (i == c.size()) return false;
  if (i == 0 || c[i - 1] == '.') return true;
  return c[i - 1] == '_' && std::islower(static_cast<unsigned char>(c[0]));
}

}  // namespace

std::string layerOf(const Node& node) {
  const std::string& name = node.name();
  // The components before the node's own name (a Call's name is its block's scope).
  size_t stop = popart::isCall(node) ? name.size() : name.rfind('/');
  if (stop == std::string::npos) return "";
  for (size_t start = 0; start < stop;) {
    size_t slash = name.find('/', start);
    size_t end = std::min(slash == std::string::npos ? name.size() : slash, stop);
    if (indexed(std::string_view(name).substr(start, end - start))) return name.substr(0, end);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return "";
}

std::optional<uint64_t> nodeFlops(const Node& n) {
  if (!isDefaultDomain(n.domain())) return 0;
  const std::string& op = n.opType();
  if (op != "MatMul" && op != "Gemm" && op != "Conv" && op != "ConvTranspose") return 0;
  auto a = shapeOf(n.input(0)), w = shapeOf(n.input(1)), out = shapeOf(n.output(0));
  if (op == "MatMul") {
    // [..., M, K] x [..., K, N]: K multiply-adds per output element.
    if (!a || a->empty() || !out) return std::nullopt;
    return 2 * static_cast<uint64_t>(a->back()) * product(*out);
  }
  if (op == "Gemm") {
    if (!a || a->size() != 2 || !out) return std::nullopt;
    int64_t k = intAttribute(n, "transA", 0) ? (*a)[0] : (*a)[1];
    return 2 * static_cast<uint64_t>(k) * product(*out);
  }
  if (!w || w->size() < 2 || (*w)[0] <= 0) return std::nullopt;
  uint64_t perChannel = product(*w) / static_cast<uint64_t>((*w)[0]);  // (C_in / group) * kernel, or (C_out / group) * kernel
  if (op == "Conv") {
    // W [C_out, C_in / group, k...]: each output element sums C_in / group * kernel products.
    if (!out) return std::nullopt;
    return 2 * perChannel * product(*out);
  }
  // ConvTranspose, W [C_in, C_out / group, k...]: each input element scatters into C_out / group * kernel outputs.
  if (!a) return std::nullopt;
  return 2 * perChannel * product(*a);
}

json Costs::toJson() const {
  return {{"nodes", nodes},         {"weights", weights}, {"optimizer_state", optimizerState},
          {"activations", activations}, {"memory", memory()}, {"flops", flops}};
}

// What one main-graph node (with its subgraphs' nodes) reads and makes.
struct Item {
  const Node* node = nullptr;
  size_t position = 0;
  size_t members = 1;  // the node and the nodes of its subgraphs
  std::vector<const Value*> weights;
  uint64_t flops = 0;
  uint64_t outputs = 0;   // bytes of its own outputs
  uint64_t internal = 0;  // bytes of the outputs of its subgraphs' nodes
  uint64_t lastUse = 0;   // position of the last main-graph node reading an output (max: a graph output)
  bool checkpoint = false, recomputed = false;
};

CostModel::CostModel(Model& model, const Options& options) : options_(options) {
  // Types whose shapes are not static (an export's value_info kept,
  // "float[1,?,16]") are inferred again from the static ones around them, and
  // missing ones inferred: per node first, reading small constant operands
  // (Reshape's shape), then ONNX's whole-model inference. The model gets its
  // own types back once the costs are read (restore below): costing changes nothing.
  Rewriter rw(model);
  std::vector<std::pair<Value*, onnx::TypeProto>> replaced;
  std::vector<std::pair<Graph*, Value*>> untyped;
  model.graph().walkGraphs([&](Graph& g) {
    for (const auto& v : g.values()) {
      if (!v->type()) {
        untyped.emplace_back(&g, v.get());
      } else if (v->producer() && !staticShape(v.get())) {
        replaced.emplace_back(v.get(), *v->type());
        rw.forgetType(v.get());
      }
    }
  });
  inferInOrder(rw);
  inferMissingTypes(rw);
  collect(model);
  for (auto& [v, type] : replaced) rw.setType(v, std::move(type));
  // (A graph input or output declared without a type keeps the one found.)
  for (auto [g, v] : untyped)
    if (v->type()) {
      rw.forgetType(v);
      rw.removeValueInfo(*g, v);  // may erase v (nothing reads or makes it)
    }
}

void CostModel::collect(Model& model) {

  const Graph& g = model.graph();
  std::unordered_map<const Node*, size_t> position;
  for (const auto& n : g.nodes()) position.emplace(n.get(), position.size());
  for (const auto& np : g.nodes()) {
    Item item;
    item.node = np.get();
    item.position = position.at(np.get());
    std::vector<const Node*> members{np.get()};
    np->forEachSubgraph([&](const Graph& sub) {
      sub.walkGraphs([&](const Graph& inner) {
        for (const auto& m : inner.nodes()) members.push_back(m.get());
      });
    });
    item.members = members.size();
    for (const Node* m : members) {
      if (model.findFunction(m->domain(), m->opType(), m->overload())) ++functionCalls_;
      auto flops = nodeFlops(*m);
      if (!flops) ++unknownFlops_;
      item.flops += flops.value_or(0);
      for (const Value* v : m->inputs())
        if (v && v->isInitializer() && std::find(item.weights.begin(), item.weights.end(), v) == item.weights.end())
          item.weights.push_back(v);
      for (const Value* v : m->outputs()) {
        if (!v) continue;
        auto bytes = valueBytes(v);
        if (!bytes) {
          ++unknownShapes_;
          spdlog::debug("stage costs: value '{}' has no static shape ({})", v->name(), typeString(v->type()));
        }
        (m == item.node ? item.outputs : item.internal) += bytes.value_or(0);
      }
    }
    item.lastUse = item.position;
    for (const Value* v : np->outputs()) {
      if (!v) continue;
      if (v->graphOutputCount() > 0) item.lastUse = std::numeric_limits<uint64_t>::max();
      for (const Use& u : v->uses())
        if (const Node* reader = popart::mainGraphNode(u.node); reader && position.count(reader))
          item.lastUse = std::max<uint64_t>(item.lastUse, position.at(reader));
    }
    item.checkpoint = popart::isCheckpoint(*np);
    item.recomputed = popart::recomputeType(*np) == popart::kRecompute;
    items_.push_back(std::move(item));
  }
}

CostModel::~CostModel() = default;

size_t CostModel::size() const { return items_.size(); }
const Node& CostModel::node(size_t item) const { return *items_.at(item).node; }

// Activations, as docs/popart.md says. Inference: the most bytes live at once
// while the group's nodes run in graph order; an output lives until its last
// reader (in any group), a graph output to the end; a Call or If adds its
// subgraphs' outputs while it runs. Training: what the backward pass needs
// kept: without checkpoints, every output (but those marked Recompute); with
// them, the checkpoints' outputs and the largest stretch between two of them.
struct CostModel::Group::State {
  Costs costs;
  std::unordered_set<const Value*> weights;
  using Ending = std::pair<uint64_t, uint64_t>;  // last use, bytes
  std::priority_queue<Ending, std::vector<Ending>, std::greater<>> live;
  uint64_t liveBytes = 0, peak = 0;
  uint64_t keptAll = 0, checkpointed = 0, stretch = 0, largest = 0;
  bool checkpoints = false;
};

CostModel::Group::Group(const CostModel& model) : model_(&model), state_(std::make_unique<State>()) {}
CostModel::Group::~Group() = default;
CostModel::Group::Group(Group&&) noexcept = default;

void CostModel::Group::add(size_t index) {
  const Item& i = model_->items_.at(index);
  State& s = *state_;
  const Optimizer optimizer = model_->options_.optimizer;
  s.costs.nodes += i.members;
  s.costs.flops += i.flops * (optimizer == Optimizer::None ? 1 : 3);  // training: forward and two backward products
  for (const Value* w : i.weights) {
    if (!s.weights.insert(w).second) continue;
    const Tensor* t = w->initializer();
    s.costs.weights += t->storedBytes();
    if (isFloating(t->dataType()))
      s.costs.optimizerState += static_cast<uint64_t>(stateTensorsPerWeight(optimizer)) *
                                static_cast<uint64_t>(std::max<int64_t>(t->elementCount(), 0)) * 4;
  }
  while (!s.live.empty() && s.live.top().first < i.position) {
    s.liveBytes -= s.live.top().second;
    s.live.pop();
  }
  s.peak = std::max(s.peak, s.liveBytes + i.outputs + i.internal);
  s.liveBytes += i.outputs;
  s.live.push({i.lastUse, i.outputs});
  uint64_t made = i.outputs + i.internal;
  if (!i.recomputed) s.keptAll += made;
  if (i.checkpoint) {
    s.checkpoints = true;
    s.checkpointed += i.outputs;
    s.largest = std::max(s.largest, s.stretch);
    s.stretch = 0;
  } else {
    s.stretch += made;
  }
}

Costs CostModel::Group::costs() const {
  Costs c = state_->costs;
  const State& s = *state_;
  if (model_->options_.optimizer == Optimizer::None)
    c.activations = s.peak;
  else
    c.activations = s.checkpoints ? s.checkpointed + std::max(s.largest, s.stretch) : s.keptAll;
  return c;
}

namespace {

// The costs of the items grouped by placement attribute `key` (-1: none; all
// in group 0 when key is null), and the layers each group holds, in order.
struct Grouped {
  Costs costs;
  std::vector<std::string> layers;
  std::set<int64_t> ipus;
};

std::map<int64_t, Grouped> group(const CostModel& model, const char* key) {
  std::map<int64_t, CostModel::Group> groups;
  std::map<int64_t, std::vector<std::string>> layers;
  std::map<int64_t, std::set<int64_t>> ipus;
  for (size_t i = 0; i < model.size(); ++i) {
    int64_t k = key ? popart::placementValue(model.node(i), key).value_or(-1) : 0;
    groups.try_emplace(k, model).first->second.add(i);
    if (auto ipu = popart::placementValue(model.node(i), popart::kIpuNumber)) ipus[k].insert(*ipu);
    auto& list = layers[k];
    if (std::string layer = layerOf(model.node(i)); !layer.empty() && std::find(list.begin(), list.end(), layer) == list.end())
      list.push_back(layer);
  }
  std::map<int64_t, Grouped> out;
  if (!model.size()) out[0] = {};
  for (const auto& [k, g] : groups) out[k] = {g.costs(), layers[k], ipus[k]};
  return out;
}

json entries(const CostModel& model, const char* key, const char* name, json& unplaced) {
  json list = json::array();
  for (const auto& [k, g] : group(model, key)) {
    json e = g.costs.toJson();
    e["layers"] = g.layers;
    if (std::string(name) == "stage") e["ipus"] = g.ipus;
    if (k < 0) {
      unplaced = e;
      continue;
    }
    e[name] = k;
    list.push_back(e);
  }
  return list;
}

bool anyPlaced(const CostModel& model, const char* key) {
  for (size_t i = 0; i < model.size(); ++i)
    if (popart::placementValue(model.node(i), key)) return true;
  return false;
}

}  // namespace

json stageCosts(Model& model, const Options& options) {
  CostModel costs(model, options);
  bool staged = anyPlaced(costs, popart::kPipelineStage), onIpus = anyPlaced(costs, popart::kIpuNumber);
  json out = {{"training", options.optimizer != Optimizer::None}, {"optimizer", optimizerName(options.optimizer)}};
  if (options.ipuMemory) out["ipu_memory"] = *options.ipuMemory;
  json stages = json::array(), unplacedStages, unplacedIpus;
  if (staged) stages = entries(costs, popart::kPipelineStage, "stage", unplacedStages);
  json ipus = entries(costs, onIpus ? popart::kIpuNumber : nullptr, "ipu", unplacedIpus);
  if (json& unplaced = staged ? unplacedStages : unplacedIpus; !unplaced.is_null()) out["unplaced"] = unplaced;
  for (auto& entry : ipus) {
    if (!options.ipuMemory) continue;
    uint64_t memory = entry["memory"];
    entry["fits"] = memory <= *options.ipuMemory;
    entry["missing"] = memory > *options.ipuMemory ? memory - *options.ipuMemory : 0;
  }
  out["placed"] = staged || onIpus;
  out["stages"] = stages;
  out["ipus"] = ipus;
  const json& by = staged ? stages : ipus;
  const char* key = staged ? "stage" : "ipu";
  // The pipeline's total: its stages' (or IPUs') costs added up, with the
  // unplaced nodes. Activations add up too: each stage keeps its own.
  json total = Costs{}.toJson();
  std::vector<const json*> parts;
  for (const auto& e : by) parts.push_back(&e);
  if (out.contains("unplaced")) parts.push_back(&out["unplaced"]);
  for (const json* e : parts)
    for (auto& [field, value] : total.items()) value = value.get<uint64_t>() + (*e)[field].get<uint64_t>();
  out["total"] = total;
  if (!by.empty()) {
    auto slowest = std::max_element(by.begin(), by.end(), [](const json& x, const json& y) {
      return x["flops"].get<uint64_t>() < y["flops"].get<uint64_t>();
    });
    out["bottleneck"] = {{key, (*slowest)[key]},
                         {"flops", (*slowest)["flops"]},
                         {"share", total["flops"].get<uint64_t>() ? (*slowest)["flops"].get<double>() / total["flops"].get<double>() : 0.0}};
  }
  out["unknown_shapes"] = costs.unknownShapes();
  out["unknown_flops"] = costs.unknownFlops();
  out["function_calls"] = costs.functionCalls();
  return out;
}

}  // namespace graphrw::stage_cost
