#include "target/popart/stage_cost.h"

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

#include "analysis/attributes.h"
#include "analysis/types.h"
#include "ir/rewriter.h"
#include "support/error.h"
#include "target/popart/popart.h"

namespace graphrw::stage_cost {

using namespace ir;
using json = nlohmann::json;

namespace {

uint64_t product(const std::vector<int64_t>& dims) {
  uint64_t c = 1;
  for (int64_t d : dims) c *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return c;
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
  const std::string_view name = node.name();
  // The components before the node's own name (a Call's name is its block's scope).
  size_t stop = popart::isCall(node) ? name.size() : name.rfind('/');
  if (stop == std::string::npos) return "";
  for (size_t start = 0; start < stop;) {
    size_t slash = name.find('/', start);
    size_t end = std::min(slash == std::string::npos ? name.size() : slash, stop);
    if (indexed(name.substr(start, end - start))) return std::string(name.substr(0, end));
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
    int64_t k = intAttr(n, "transA", 0) ? (*a)[0] : (*a)[1];
    return 2 * static_cast<uint64_t>(k) * product(*out);
  }
  if (!w || w->size() < 2 || (*w)[0] <= 0) return std::nullopt;
  uint64_t perChannel =
      product(*w) / static_cast<uint64_t>((*w)[0]);  // (C_in / group) * kernel, or (C_out / group) * kernel
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
  return {{"nodes", nodes},     {"weights", weights}, {"optimizer_state", optimizerState}, {"activations", activations},
          {"memory", memory()}, {"flops", flops}};
}

// What one main-graph node (with its subgraphs' nodes) reads and makes.
struct Item {
  const Node* node = nullptr;
  size_t position = 0;
  size_t members = 1;  // the node and the nodes of its subgraphs
  std::vector<const Value*> weights;
  uint64_t flops = 0;
  uint64_t outputs = 0;  // bytes of its own outputs
  uint64_t internal = 0;  // bytes of the outputs of its subgraphs' nodes
  uint64_t lastUse = 0;  // position of the last main-graph node reading an output (max: a graph output)
  bool checkpoint = false, recomputed = false;
};

namespace {

// The leading dimension of a graph input that is not an initializer, when its type has one.
const onnx::TensorShapeProto_Dimension* leadingDim(const ValueInfo& in) {
  const onnx::TypeProto* t = in.value->type();
  if (in.value->isInitializer() || !t || !t->has_tensor_type() || !t->tensor_type().has_shape() ||
      t->tensor_type().shape().dim_size() == 0)
    return nullptr;
  return &t->tensor_type().shape().dim(0);
}

// The values that depend on the model's batched inputs: what they feed,
// through subgraphs too, but not a shape read from them (Shape, Size) nor
// what is computed from such shapes alone.
void markBatched(const Graph& g, std::unordered_set<const Value*>& batched) {
  for (const auto& n : g.nodes()) {
    bool reads =
        std::any_of(n->inputs().begin(), n->inputs().end(), [&](const Value* v) { return v && batched.count(v); });
    bool yields = false;
    n->forEachSubgraph([&](const Graph& sub) {
      if (reads)  // loop-carried state and scanned inputs follow the node's
        for (const auto& in : sub.inputs()) batched.insert(in.value);
      markBatched(sub, batched);
      for (const auto& out : sub.outputs()) yields |= batched.count(out.value) > 0;
    });
    if (!(reads || yields) || (isDefaultDomain(n->domain()) && (n->opType() == "Shape" || n->opType() == "Size")))
      continue;
    for (const Value* v : n->outputs())
      if (v) batched.insert(v);
  }
}

}  // namespace

CostModel::CostModel(Model& model, const Options& options) : options_(options) {
  // Types whose shapes are not static (an export's value_info kept,
  // "float[1,?,16]") are inferred again from the static ones around them, and
  // missing ones inferred: per node first, reading small constant operands
  // (Reshape's shape), then ONNX's whole-model inference. The model gets its
  // own types back once the costs are read (restore below): costing changes nothing.
  Rewriter rw(model);
  std::vector<std::pair<Value*, onnx::TypeProto>> replaced, declared;
  std::vector<std::pair<Graph*, Value*>> untyped;
  if (options.batch) declared = setBatch(rw);
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
  if (options.batch) {
    for (const auto& in : model.graph().inputs())
      if (const auto* dim = leadingDim(in); dim && dim->has_dim_value() && dim->dim_value() == modelBatch_)
        batched_.insert(in.value);
    markBatched(model.graph(), batched_);
  }
  collect(model);
  for (auto& [v, type] : replaced) rw.setType(v, std::move(type));
  for (auto& [v, type] : declared) rw.declareType(model.graph(), v, std::move(type));
  // (A graph input or output declared without a type keeps the one found.)
  for (auto [g, v] : untyped)
    if (v->type()) {
      rw.forgetType(v);
      rw.removeValueInfo(*g, v);  // may erase v (nothing reads or makes it)
    }
}

// With Options::batch, the model's batch is its first input's leading
// dimension; when that is symbolic, every input whose leading dimension is the
// same symbol is declared with the batch asked for, until the costs are read.
// Returns the declarations replaced.
std::vector<std::pair<Value*, onnx::TypeProto>> CostModel::setBatch(Rewriter& rw) {
  const int64_t batch = *options_.batch;
  Graph& g = rw.model().graph();
  const onnx::TensorShapeProto_Dimension* first = nullptr;
  for (const auto& in : g.inputs())
    if ((first = leadingDim(in))) break;
  if (!first)
    usageError("--batch " + std::to_string(batch) + ": the model has no input with a leading (batch) dimension");
  const auto leading = *first;  // a copy: the declarations below replace the types it is in
  std::vector<std::pair<Value*, onnx::TypeProto>> declared;
  if (leading.has_dim_value() && leading.dim_value() > 0) {
    modelBatch_ = leading.dim_value();
    return declared;
  }
  modelBatch_ = batch;
  modelBatchSymbol_ = leading.dim_param().empty() ? "?" : leading.dim_param();
  for (const auto& in : g.inputs()) {
    const auto* dim = leadingDim(in);
    if (!dim || dim->has_dim_value() || dim->dim_param() != leading.dim_param()) continue;
    onnx::TypeProto set = *in.value->type();
    set.mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(batch);
    declared.emplace_back(in.value, *in.value->type());
    rw.declareType(g, in.value, std::move(set));
  }
  return declared;
}

// The bytes of v (0 and *unknown set when its shape is not static), scaled by
// `scale` and, when it depends on the batch, by the batch asked for against the model's.
uint64_t CostModel::bytes(const Value* v, double scale, bool* unknown) const {
  auto b = valueBytes(v);
  if (!b) {
    *unknown = true;
    return 0;
  }
  return scaled(v, static_cast<uint64_t>(std::llround(static_cast<double>(*b) * scale)));
}

uint64_t CostModel::scaled(const Value* v, uint64_t amount) const {
  if (!options_.batch || !batched_.count(v)) return amount;
  const auto batch = static_cast<uint64_t>(*options_.batch), model = static_cast<uint64_t>(modelBatch_);
  return amount / model * batch + amount % model * batch / model;
}

std::vector<std::string> CostModel::unmatchedOps() const {
  std::vector<std::string> out;
  for (const auto& [op, _] : options_.calibration.ops)
    if (!matchedOps_.count(op)) out.push_back(op);
  return out;
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
      OpCost calibration;
      const auto& ops = options_.calibration.ops;
      if (auto op = ops.empty() ? ops.end() : ops.find(opKey(*m)); op != ops.end()) {
        calibration = op->second;
        matchedOps_.insert(op->first);
      }
      item.flops += flopsOf(*m, calibration);
      for (const Value* v : m->inputs())
        if (v && v->isInitializer() && std::find(item.weights.begin(), item.weights.end(), v) == item.weights.end())
          item.weights.push_back(v);
      for (const Value* v : m->outputs()) {
        if (!v) continue;
        bool unknown = false;
        (m == item.node ? item.outputs : item.internal) += bytes(v, calibration.activationScale, &unknown);
        if (unknown) {
          ++unknownShapes_;
          spdlog::debug("stage costs: value '{}' has no static shape ({})", v->name(), typeString(v->type()));
        }
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

// A node's FLOPs, calibrated and scaled with the batch (its first output's).
uint64_t CostModel::flopsOf(const Node& m, const OpCost& calibration) {
  auto flops = nodeFlops(m);
  if (!flops) ++unknownFlops_;
  double total = static_cast<double>(flops.value_or(0)) * calibration.flopsScale;
  const Value* out = m.outputs().empty() ? nullptr : m.output(0);
  if (calibration.flopsPerElement > 0 && out) {
    auto shape = shapeOf(out);
    if (shape)
      total += static_cast<double>(product(*shape)) * calibration.flopsPerElement;
    else
      ++unknownFlops_;
  }
  auto rounded = static_cast<uint64_t>(std::llround(total));
  return out ? scaled(out, rounded) : rounded;
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

Costs CostModel::Group::costs(uint64_t stash) const {
  Costs c = state_->costs;
  const State& s = *state_;
  if (model_->options_.optimizer == Optimizer::None)
    c.activations = s.peak;
  else  // what is kept, once per micro-batch in flight; the stretch recomputed, once
    c.activations = s.checkpoints ? stash * s.checkpointed + std::max(s.largest, s.stretch) : stash * s.keptAll;
  return c;
}

}  // namespace graphrw::stage_cost
