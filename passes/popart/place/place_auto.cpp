#include "passes/popart/place/place_auto.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>

#include "pass/pass.h"
#include "support/error.h"
#include "target/popart/popart.h"

namespace graphrw::passes {

using namespace ir;
using stage_cost::CostModel;
using stage_cost::Costs;
using stage_cost::humanBytes;

namespace {

// A run of nodes that goes into one stage whole: a layer, or the nodes
// between layers (embeddings, a head), or (graphs without layers) a chunk of nodes.
struct Unit {
  size_t begin = 0, end = 0;  // items [begin, end)
  std::string label;
  std::optional<size_t> pin;
};

struct Best {
  bool ok = false;
  double primary = 0, secondary = 0;
  size_t from = 0;  // the unit the last stage starts at
};

class AutoRun {
 public:
  AutoRun(Model& model, const AutoPlaceOptions& o)
      : o_(o),
        costs_(model, {o.optimizer, std::nullopt, o.batch, o.calibration}),
        capacity_(o.ipuMemory > o.calibration.reserve ? o.ipuMemory - o.calibration.reserve : 1) {
    for (const auto& op : costs_.unmatchedOps())
      reportNoMatch("place", "costs: the calibration's op '" + op + "' is not in the model", o.allowNoMatch);
  }

  AutoPlacement run() {
    makeUnits();
    pinUnits();
    const size_t n = o_.stages;
    if (units_.size() < n)
      usageError("place --auto " + std::to_string(n) + ": the graph has " + std::to_string(units_.size()) + " " +
                 (byLayers_ ? "layers and runs of nodes between them" : "nodes") + " to spread over " +
                 std::to_string(n) + " stages; give fewer stages");
    CostModel::Group whole(costs_);
    for (size_t i = 0; i < costs_.size(); ++i) whole.add(i);
    Costs all = whole.costs();
    std::set<int64_t> ipus;
    std::vector<std::set<int64_t>> stageIpus;
    for (size_t k = 0; k < n; ++k) {
      ipus.insert(ipuOf(k));
      stageIpus.push_back({ipuOf(k)});
    }
    // Training: each stage holds the activations of as many micro-batches as its stash depth.
    for (size_t k = 0; k < n; ++k)
      stash_.push_back(o_.optimizer == stage_cost::Optimizer::None ? 1 : stage_cost::stashDepth(k, stageIpus));
    flopsUnit_ = std::max(1.0, static_cast<double>(all.flops) / static_cast<double>(ipus.size()));
    memoryUnit_ = std::max(1.0, static_cast<double>(all.memory()) / static_cast<double>(ipus.size()));
    std::vector<Costs> extra(n);
    auto cuts = partition(o_.balance, capacity_, extra);
    if (cuts.empty()) {
      auto leanest = partition(Balance::Memory, 0, extra);
      if (leanest.empty())
        usageError("place --auto: the pinned nodes cannot go into " + std::to_string(n) +
                   " contiguous stages in their order along the graph (a node pinned to a later stage before one "
                   "pinned to an earlier stage, or pins splitting a layer)");
      notFitting(stageCosts(leanest), "stage");
    }
    if (ipus.size() < n) cuts = shareIpus(cuts);
    auto perStage = stageCosts(cuts);
    checkSharedIpus(cuts);
    return result(cuts, perStage);
  }

 private:
  int64_t ipuOf(size_t stage) const { return o_.ipus.empty() ? static_cast<int64_t>(stage) : o_.ipus.at(stage); }

  // Units along the graph order: runs of nodes of one layer; nodes without a
  // layer between two nodes of the same layer belong to it. With fewer layers
  // than stages, chunks of nodes instead (at most kMaxUnits).
  void makeUnits() {
    const size_t count = costs_.size();
    std::vector<std::string> layer(count);
    for (size_t i = 0; i < count; ++i) layer[i] = stage_cost::layerOf(costs_.node(i));
    for (size_t a = 0; a < count;) {
      if (!layer[a].empty()) {
        ++a;
        continue;
      }
      size_t b = a;
      while (b < count && layer[b].empty()) ++b;
      if (a > 0 && b < count && layer[a - 1] == layer[b])
        for (size_t i = a; i < b; ++i) layer[i] = layer[b];
      a = b;
    }
    size_t layers = 0;
    for (size_t i = 0; i < count; ++i)
      if (!layer[i].empty() && (i == 0 || layer[i] != layer[i - 1])) ++layers;
    byLayers_ = layers >= o_.stages;
    if (byLayers_) {
      for (size_t i = 0; i < count; ++i) {
        if (units_.empty() || layer[i] != layer[i - 1]) units_.push_back({i, i, layer[i], {}});
        units_.back().end = i + 1;
      }
      // A run between layers is named after them: "(before /layers.0)", "(after /layers.2)".
      for (size_t x = 0; x < units_.size(); ++x) {
        if (!units_[x].label.empty()) continue;
        const std::string& before = x + 1 < units_.size() ? units_[x + 1].label : "";
        const std::string& after = x > 0 ? units_[x - 1].label : "";
        units_[x].label = after.empty()    ? "(before " + before + ")"
                          : before.empty() ? "(after " + after + ")"
                                           : "(between " + after + " and " + before + ")";
      }
    } else {
      size_t chunk = (count + kMaxUnits - 1) / kMaxUnits;
      for (size_t i = 0; i < count; i += std::max<size_t>(chunk, 1))
        units_.push_back({i, std::min(count, i + std::max<size_t>(chunk, 1)), "'" + costs_.node(i).name() + "'", {}});
    }
  }

  void pinUnits() {
    std::vector<size_t> matched(o_.pins.size(), 0);
    for (Unit& u : units_)
      for (size_t i = u.begin; i < u.end; ++i)
        for (size_t p = 0; p < o_.pins.size(); ++p) {
          const auto& [stage, selectors] = o_.pins[p];
          if (!selectors.matches(costs_.node(i))) continue;
          ++matched[p];
          if (u.pin && *u.pin != stage)
            usageError(std::string("place --auto: ") +
                       (byLayers_ ? (u.label[0] == '(' ? "the nodes " : "layer ") : "the nodes from ") + u.label +
                       " would go into stage " + std::to_string(*u.pin) + " and stage " + std::to_string(stage) + " (" +
                       nodeLabel(costs_.node(i)) + " is pinned by '" + selectors.str() +
                       "'); a layer goes into one stage");
          u.pin = stage;
        }
    for (size_t p = 0; p < o_.pins.size(); ++p)
      if (!matched[p])
        reportNoMatch(
            "place",
            "pin of stage " + std::to_string(o_.pins[p].first) + ": '" + o_.pins[p].second.str() + "' matched no node",
            o_.allowNoMatch);
  }

  std::pair<double, double> score(const Costs& c, Balance balance) const {
    double flops = static_cast<double>(c.flops), memory = static_cast<double>(c.memory());
    switch (balance) {
      case Balance::Compute:
        return {flops, memory};
      case Balance::Memory:
        return {memory, flops};
      case Balance::Both:
        break;
    }
    return {std::max(flops / flopsUnit_, memory / memoryUnit_), flops};
  }

  // The first unit of each stage (and units_.size() last) of the best
  // contiguous split into o_.stages stages, each within `limit` bytes (0: no
  // limit) and honouring the pins; empty when there is none. Dynamic
  // programming over (stages used, units placed): each stage is grown one
  // unit at a time from each start, its costs updated as it grows.
  // Long: the recurrence and its three constraints (memory, pins, enough units left) in one loop nest.
  std::vector<size_t> partition(Balance balance, uint64_t limit, const std::vector<Costs>& extra) const {
    const size_t n = o_.stages, u = units_.size();
    std::vector<std::vector<Best>> best(n + 1, std::vector<Best>(u + 1));
    best[0][0].ok = true;
    for (size_t i = 0; i < u; ++i) {
      bool reachable = false;
      for (size_t k = 0; k < n; ++k) reachable |= best[k][i].ok;
      if (!reachable) continue;
      CostModel::Group stage(costs_);
      std::optional<size_t> pin;
      for (size_t j = i + 1; j <= u; ++j) {
        const Unit& unit = units_[j - 1];
        if (unit.pin) {
          if (pin && *pin != *unit.pin) break;  // two pins in one stage: longer stages have them too
          pin = unit.pin;
        }
        for (size_t item = unit.begin; item < unit.end; ++item) stage.add(item);
        // Growing a stage never makes it smaller; a stash depth of 1 is the least any stage has.
        if (limit && stage.costs(1).memory() > limit) break;
        for (size_t k = 0; k < n; ++k) {
          const Best& before = best[k][i];
          if (!before.ok || (pin && *pin != k) || u - j < n - k - 1) continue;
          const Costs onIpu = plus(stage.costs(stash_[k]), extra[k]);  // with the other stages its IPU holds
          if (limit && onIpu.memory() > limit) continue;
          auto [primary, secondary] = score(onIpu, balance);
          double p = std::max(before.primary, primary), s = std::max(before.secondary, secondary);
          Best& slot = best[k + 1][j];
          if (!slot.ok || p < slot.primary || (p == slot.primary && s < slot.secondary)) slot = {true, p, s, i};
        }
      }
    }
    if (!best[n][u].ok) return {};
    std::vector<size_t> cuts(n + 1);
    cuts[n] = u;
    for (size_t k = n, j = u; k > 0; --k) {
      j = best[k][j].from;
      cuts[k - 1] = j;
    }
    return cuts;
  }

  static Costs plus(Costs a, const Costs& b) {
    a.nodes += b.nodes;
    a.weights += b.weights;
    a.optimizerState += b.optimizerState;
    a.activations += b.activations;
    a.flops += b.flops;
    return a;
  }

  // Per IPU, the costs of the stages it holds (a weight read by two of them
  // counts once; activations are each stage's, with its stash depth).
  std::map<int64_t, Costs> ipuCosts(const std::vector<size_t>& cuts) const {
    std::map<int64_t, CostModel::Group> groups;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      auto& group = groups.try_emplace(ipuOf(k), costs_).first->second;
      for (size_t x = cuts[k]; x < cuts[k + 1]; ++x)
        for (size_t item = units_[x].begin; item < units_[x].end; ++item) group.add(item);
    }
    std::map<int64_t, Costs> out;
    for (const auto& [ipu, group] : groups) {
      out[ipu] = group.costs();
      out[ipu].activations = 0;
    }
    auto perStage = stageCosts(cuts);
    for (size_t k = 0; k < perStage.size(); ++k) out[ipuOf(k)].activations += perStage[k].activations;
    return out;
  }

  // With stages sharing an IPU (--ipus 0,1,2,3,0), an IPU's time and memory
  // are its stages' together, which the split of one stage cannot see: the
  // split is made again with each stage charged the others on its IPU as they
  // last came out, a few rounds, and the best split by its IPUs' totals kept.
  std::vector<size_t> shareIpus(std::vector<size_t> cuts) const {
    auto value = [&](const std::vector<size_t>& c) {
      std::pair<double, double> worst{0, 0};
      bool fits = true;
      for (const auto& [ipu, costs] : ipuCosts(c)) {
        worst = std::max(worst, score(costs, o_.balance));
        fits &= costs.memory() <= capacity_;
      }
      return std::pair{!fits, worst};
    };
    auto best = cuts;
    auto bestValue = value(cuts);
    for (int round = 0; round < 8; ++round) {
      auto perStage = stageCosts(cuts);
      std::vector<Costs> extra(perStage.size());
      for (size_t k = 0; k < perStage.size(); ++k)
        for (size_t other = 0; other < perStage.size(); ++other)
          if (other != k && ipuOf(other) == ipuOf(k)) extra[k] = plus(extra[k], perStage[other]);
      auto next = partition(o_.balance, capacity_, extra);
      if (next.empty() || next == cuts) break;
      cuts = next;
      if (auto v = value(cuts); v < bestValue) {
        best = cuts;
        bestValue = v;
      }
    }
    return best;
  }

  std::vector<Costs> stageCosts(const std::vector<size_t>& cuts) const {
    std::vector<Costs> out;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      CostModel::Group stage(costs_);
      for (size_t x = cuts[k]; x < cuts[k + 1]; ++x)
        for (size_t item = units_[x].begin; item < units_[x].end; ++item) stage.add(item);
      out.push_back(stage.costs(stash_[k]));
    }
    return out;
  }

  // The memory left for the model's tensors on one IPU.
  std::string capacityText() const {
    if (!o_.calibration.reserve) return humanBytes(capacity_);
    return humanBytes(capacity_) + " (" + humanBytes(o_.ipuMemory) + " less the " + humanBytes(o_.calibration.reserve) +
           " reserve)";
  }

  [[noreturn]] void notFitting(const std::vector<Costs>& costs, const std::string& what) const {
    std::string missing;
    for (size_t k = 0; k < costs.size(); ++k) {
      if (costs[k].memory() <= capacity_) continue;
      missing += (missing.empty() ? "" : "; ") + what + " " + std::to_string(k) + " needs " +
                 humanBytes(costs[k].memory()) + " (" + humanBytes(costs[k].memory() - capacity_) + " missing)";
    }
    usageError("place --auto " + std::to_string(o_.stages) + ": no placement fits " + capacityText() +
               " per IPU; the one needing the least memory: " + missing);
  }

  // Stages mapped to one IPU (--ipus 0,1,2,3,0) share its memory.
  void checkSharedIpus(const std::vector<size_t>& cuts) const {
    std::string missing;
    for (const auto& [ipu, costs] : ipuCosts(cuts))
      if (costs.memory() > capacity_)
        missing += (missing.empty() ? "" : "; ") + std::string("IPU ") + std::to_string(ipu) + " needs " +
                   humanBytes(costs.memory()) + " (" + humanBytes(costs.memory() - capacity_) + " missing)";
    if (!missing.empty())
      usageError("place --auto " + std::to_string(o_.stages) + ": the stages fit " + capacityText() +
                 " each, but the IPUs holding several do not: " + missing);
  }

  AutoPlacement result(const std::vector<size_t>& cuts, const std::vector<Costs>& perStage) const {
    AutoPlacement out;
    out.stageOf.assign(costs_.size(), 0);
    nlohmann::json stages = nlohmann::json::array();
    size_t slowest = 0;
    uint64_t total = 0;
    for (size_t k = 0; k < perStage.size(); ++k) {
      for (size_t x = cuts[k]; x < cuts[k + 1]; ++x)
        for (size_t item = units_[x].begin; item < units_[x].end; ++item) out.stageOf[item] = k;
      nlohmann::json e = {{"stage", k},
                          {"ipu", ipuOf(k)},
                          {"stash", stash_[k]},
                          {"first", units_[cuts[k]].label},
                          {"last", units_[cuts[k + 1] - 1].label},
                          {"units", cuts[k + 1] - cuts[k]}};
      e.update(perStage[k].toJson());
      stages.push_back(e);
      total += perStage[k].flops;
      if (perStage[k].flops > perStage[slowest].flops) slowest = k;
    }
    out.report = {
        {"stages", stages},
        {"units", byLayers_ ? "layers" : "nodes"},
        {"ipu_memory", o_.ipuMemory},
        {"optimizer", stage_cost::optimizerName(o_.optimizer)},
        {"reserve", o_.calibration.reserve},
        {"bottleneck",
         {{"stage", slowest},
          {"flops", perStage[slowest].flops},
          {"share", total ? static_cast<double>(perStage[slowest].flops) / static_cast<double>(total) : 0.0}}},
        {"unknown_shapes", costs_.unknownShapes()}};
    if (o_.batch) {
      out.report["batch"] = *o_.batch;
      out.report["model_batch"] = costs_.modelBatchSymbol().empty() ? nlohmann::json(costs_.modelBatch())
                                                                    : nlohmann::json(costs_.modelBatchSymbol());
    }
    return out;
  }

  static constexpr size_t kMaxUnits = 2048;
  const AutoPlaceOptions& o_;
  CostModel costs_;
  const uint64_t capacity_;  // ipu_memory less the calibration's reserve
  std::vector<Unit> units_;
  std::vector<uint64_t> stash_;  // per stage: its stash depth (1 in inference)
  bool byLayers_ = true;
  double flopsUnit_ = 1, memoryUnit_ = 1;
};

}  // namespace

// One --stage or --pin selector text: alternatives separated by '|', as a
// selector or a list of them.
nlohmann::json selectorsFromFlag(const std::string& text) {
  nlohmann::json alternatives = nlohmann::json::array();
  size_t start = 0;
  while (true) {
    size_t bar = text.find('|', start);
    alternatives.push_back(
        Selector::parse(text.substr(start, bar == std::string::npos ? std::string::npos : bar - start)).toJson());
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return alternatives.size() == 1 ? alternatives[0] : alternatives;
}

// --pin STAGE=SEL (alternatives separated by '|') as the rule file's {"stage", "select"}.
nlohmann::json pinsFromFlags(const std::vector<std::string>& values) {
  nlohmann::json pins = nlohmann::json::array();
  for (const auto& text : values) {
    size_t eq = text.find('=');
    int64_t stage = 0;
    auto [end, ec] = eq == std::string::npos ? std::from_chars(text.data(), text.data(), stage)
                                             : std::from_chars(text.data(), text.data() + eq, stage);
    if (eq == std::string::npos || eq == 0 || ec != std::errc() || end != text.data() + eq)
      usageError("--pin '" + text + "': expected STAGE=SELECTOR (a stage number, negative from the end)");
    pins.push_back({{"stage", stage}, {"select", selectorsFromFlag(text.substr(eq + 1))}});
  }
  return pins;
}

AutoPlaceOptions autoPlaceOptions(const nlohmann::json& entry, const std::vector<SelectorSet>& stages,
                                  const std::vector<int64_t>& ipus, bool allowNoMatch,
                                  const std::function<std::string(const std::string&)>& at, const std::string& pointer,
                                  const std::filesystem::path& baseDir) {
  AutoPlaceOptions a;
  a.stages = entry["auto"].get<size_t>();
  a.ipus = ipus;
  if (!a.ipus.empty() && a.ipus.size() != a.stages)
    usageError(at(pointer + "/ipus") + ": " + std::to_string(a.ipus.size()) + " IPUs for " + std::to_string(a.stages) +
               " stages (--auto)");
  if (stages.size() > a.stages)
    usageError(at(pointer + "/stages") + ": " + std::to_string(stages.size()) + " stages pinned, " +
               std::to_string(a.stages) + " made (--auto)");
  a.ipuMemory = stage_cost::parseBytes(entry.value("ipu_memory", std::string("900MiB")), at(pointer + "/ipu_memory"));
  a.optimizer = *stage_cost::parseOptimizer(entry.value("optimizer", std::string("none")));
  const std::string balance = entry.value("balance", std::string("compute"));
  a.balance = balance == "compute" ? Balance::Compute : balance == "memory" ? Balance::Memory : Balance::Both;
  if (entry.contains("batch")) a.batch = entry["batch"].get<int64_t>();
  if (entry.contains("costs")) a.calibration = calibrationFrom(entry["costs"], at(pointer + "/costs"), baseDir);
  if (a.calibration.reserve >= a.ipuMemory)
    usageError(at(pointer + "/costs") + ": the reserve (" + humanBytes(a.calibration.reserve) + ") leaves nothing of " +
               humanBytes(a.ipuMemory) + " per IPU");
  for (size_t i = 0; i < stages.size(); ++i) a.pins.emplace_back(i, stages[i]);
  if (entry.contains("pin"))
    for (size_t k = 0; k < entry["pin"].size(); ++k) {
      const std::string p = pointer + "/pin/" + std::to_string(k);
      int64_t stage = entry["pin"][k]["stage"];
      int64_t resolved = stage < 0 ? static_cast<int64_t>(a.stages) + stage : stage;
      if (resolved < 0 || resolved >= static_cast<int64_t>(a.stages))
        usageError(at(p + "/stage") + ": stage " + std::to_string(stage) + " of " + std::to_string(a.stages) +
                   " (--auto)");
      a.pins.emplace_back(static_cast<size_t>(resolved),
                          SelectorSet::fromJson(entry["pin"][k]["select"], at, p + "/select"));
    }
  a.allowNoMatch = allowNoMatch;
  return a;
}

stage_cost::Calibration calibrationFrom(const nlohmann::json& costs, const std::string& what,
                                        const std::filesystem::path& baseDir) {
  if (!costs.is_string()) return stage_cost::parseCalibration(costs, what);
  std::filesystem::path file = costs.get<std::string>();
  return stage_cost::loadCalibration(file.is_relative() ? baseDir / file : file, what);
}

AutoPlacement autoPlace(Model& model, const AutoPlaceOptions& options) { return AutoRun(model, options).run(); }

}  // namespace graphrw::passes
