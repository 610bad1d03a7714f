// Costs per pipeline stage and IPU of a placed model (target/popart/stage_cost.h):
// the cost model's groups, PopART's stash depths, and the report.
#include <algorithm>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "target/popart/popart.h"
#include "target/popart/stage_cost.h"

namespace graphrw::stage_cost {

using namespace ir;
using json = nlohmann::json;

uint64_t stashDepth(size_t stage, const std::vector<std::set<int64_t>>& ipus) {
  // The 2N - 1 stages of the training pipeline: forward 0..N-1, then the
  // backward of N-2 down to 0 (N-1's backward runs in stage N-1 itself).
  const size_t n = ipus.size();
  if (stage >= n) return 1;
  auto ipusOf = [&](size_t t) -> const std::set<int64_t>& { return t < n ? ipus[t] : ipus[2 * (n - 1) - t]; };
  // Consecutive stages sharing an IPU run together (PopART's withStages);
  // the depth counts the independent ones from `stage` to its backward.
  uint64_t independent = 0;
  for (size_t t = stage; t <= 2 * (n - 1) - stage; ++t) {
    bool together = false;
    if (t > stage) {
      const auto& a = ipusOf(t);
      const auto& b = ipusOf(t - 1);
      together = std::any_of(a.begin(), a.end(), [&](int64_t ipu) { return b.count(ipu) > 0; });
    }
    if (!together) ++independent;
  }
  return independent;
}

namespace {

// The costs of the items grouped by placement attribute `key` (-1: none; all
// in group 0 when key is null), and the layers each group holds, in order.
struct Grouped {
  Costs costs;
  std::vector<std::string> layers;
  std::set<int64_t> ipus;
};

// With `stash` (a training pipeline: per stage, its stash depth), a group's
// activations are those of each stage in it, each with its stage's depth.
std::map<int64_t, Grouped> group(const CostModel& model, const char* key, const std::map<int64_t, uint64_t>& stash) {
  std::map<int64_t, CostModel::Group> groups;
  std::map<std::pair<int64_t, int64_t>, CostModel::Group> byStage;  // (group, stage)
  std::map<int64_t, std::vector<std::string>> layers;
  std::map<int64_t, std::set<int64_t>> ipus;
  for (size_t i = 0; i < model.size(); ++i) {
    int64_t k = key ? popart::placementValue(model.node(i), key).value_or(-1) : 0;
    groups.try_emplace(k, model).first->second.add(i);
    if (!stash.empty())
      byStage.try_emplace({k, popart::placementValue(model.node(i), popart::kPipelineStage).value_or(-1)}, model)
          .first->second.add(i);
    if (auto ipu = popart::placementValue(model.node(i), popart::kIpuNumber)) ipus[k].insert(*ipu);
    auto& list = layers[k];
    if (std::string layer = layerOf(model.node(i));
        !layer.empty() && std::find(list.begin(), list.end(), layer) == list.end())
      list.push_back(layer);
  }
  std::map<int64_t, Grouped> out;
  if (!model.size()) out[0] = {};
  for (const auto& [k, g] : groups) out[k] = {g.costs(), layers[k], ipus[k]};
  if (!stash.empty()) {
    for (auto& [k, g] : out) g.costs.activations = 0;
    for (const auto& [at, g] : byStage) {
      auto depth = stash.find(at.second);
      out[at.first].costs.activations += g.costs(depth == stash.end() ? 1 : depth->second).activations;
    }
  }
  return out;
}

json entries(const CostModel& model, const char* key, const char* name, const std::map<int64_t, uint64_t>& stash,
             json& unplaced) {
  json list = json::array();
  for (const auto& [k, g] : group(model, key, stash)) {
    json e = g.costs.toJson();
    e["layers"] = g.layers;
    if (std::string(name) == "stage") e["ipus"] = g.ipus;
    if (std::string(name) == "stage" && stash.count(k)) e["stash"] = stash.at(k);
    if (k < 0) {
      unplaced = e;
      continue;
    }
    e[name] = k;
    list.push_back(e);
  }
  return list;
}

// Per pipeline stage of the model (in order: forward stage s is the s-th), its stash depth.
std::map<int64_t, uint64_t> stashDepths(const CostModel& model) {
  std::map<int64_t, std::set<int64_t>> ipus;
  for (size_t i = 0; i < model.size(); ++i)
    if (auto stage = popart::placementValue(model.node(i), popart::kPipelineStage)) {
      auto& set = ipus[*stage];
      if (auto ipu = popart::placementValue(model.node(i), popart::kIpuNumber)) set.insert(*ipu);
    }
  std::vector<std::set<int64_t>> ordered;
  for (const auto& [stage, set] : ipus) ordered.push_back(set);
  std::map<int64_t, uint64_t> out;
  size_t s = 0;
  for (const auto& [stage, set] : ipus) out[stage] = stashDepth(s++, ordered);
  return out;
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
  for (const auto& op : costs.unmatchedOps())
    spdlog::warn("stage costs: the calibration's op '{}' is not in the model", op);
  json out = {{"training", options.optimizer != Optimizer::None}, {"optimizer", optimizerName(options.optimizer)}};
  if (options.ipuMemory) out["ipu_memory"] = *options.ipuMemory;
  if (options.calibration.reserve) out["reserve"] = options.calibration.reserve;
  if (options.batch) {
    out["batch"] = *options.batch;
    out["model_batch"] = costs.modelBatchSymbol().empty() ? json(costs.modelBatch()) : json(costs.modelBatchSymbol());
  }
  json stages = json::array(), unplacedStages, unplacedIpus;
  const auto stash =
      options.optimizer != Optimizer::None && staged ? stashDepths(costs) : std::map<int64_t, uint64_t>{};
  if (staged) stages = entries(costs, popart::kPipelineStage, "stage", stash, unplacedStages);
  json ipus = entries(costs, onIpus ? popart::kIpuNumber : nullptr, "ipu", stash, unplacedIpus);
  if (json& unplaced = staged ? unplacedStages : unplacedIpus; !unplaced.is_null()) out["unplaced"] = unplaced;
  for (auto& entry : ipus) {
    if (!options.ipuMemory) continue;
    // The reserve (code, exchange buffers) is taken on every IPU before the tensors.
    uint64_t memory = entry["memory"].get<uint64_t>() + options.calibration.reserve;
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
    out["bottleneck"] = {
        {key, (*slowest)[key]},
        {"flops", (*slowest)["flops"]},
        {"share",
         total["flops"].get<uint64_t>() ? (*slowest)["flops"].get<double>() / total["flops"].get<double>() : 0.0}};
  }
  out["unknown_shapes"] = costs.unknownShapes();
  out["unknown_flops"] = costs.unknownFlops();
  out["function_calls"] = costs.functionCalls();
  return out;
}

}  // namespace graphrw::stage_cost
