// The cost model of pipeline stages and IPUs (issue 28; docs/popart.md, "Stage
// costs"): what each IPU holds (weights; in training their gradients and
// optimizer state, and the activations kept for the backward pass) and the
// work each stage does (FLOPs of MatMul, Gemm, Conv and ConvTranspose), read
// from the static shapes of a placed model. `graphrw inspect --stages` prints it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace graphrw::stage_cost {

// Inference (None), or training with an optimizer. Per trained (floating)
// weight, besides the weight, an fp32 tensor of its size for: sgd, the
// gradient; momentum, the gradient and the velocity; adam and lamb, the
// gradient and the two moments.
enum class Optimizer { None, Sgd, Momentum, Adam, Lamb };
std::optional<Optimizer> parseOptimizer(const std::string& name);  // "none", "sgd", ...
const char* optimizerName(Optimizer o);
int stateTensorsPerWeight(Optimizer o);

// "900MiB", "1.5GB", "65536" as bytes: KB, MB, GB are powers of 1000, KiB,
// MiB, GiB of 1024, B or nothing bytes. Throws Error(Usage) naming `what`.
uint64_t parseBytes(const std::string& text, const std::string& what);

// The layer a node belongs to, from its name's scope: the path up to the
// first indexed component ("/encoder/layer.3/attention/MatMul" ->
// "/encoder/layer.3", "/layer1/layer1.0/conv1/Conv" -> "/layer1/layer1.0");
// "" outside any (embeddings, heads). A Call's own name counts (outline names
// it after its block); another node's last component is its own name, not a scope.
std::string layerOf(const ir::Node& node);

// Bytes as people read them: "512 B", "1.5 KiB", "900.0 MiB".
std::string humanBytes(uint64_t bytes);

// The FLOPs of one node (a multiply-add counts 2) from its static shapes:
// MatMul, Gemm, Conv, ConvTranspose; 0 for any other op. nullopt when the
// node is one of those and a shape it needs is unknown.
std::optional<uint64_t> nodeFlops(const ir::Node& n);

struct Options {
  Optimizer optimizer = Optimizer::None;
  std::optional<uint64_t> ipuMemory;  // bytes per IPU: each IPU's "fits" and "missing"
};

struct Costs {
  size_t nodes = 0;
  uint64_t weights = 0, optimizerState = 0, activations = 0, flops = 0;
  uint64_t memory() const { return weights + optimizerState + activations; }
  nlohmann::json toJson() const;
};

struct Item;

// The costs of the main graph's nodes (items, in graph order; a Call or If
// with the nodes of its subgraphs) and of any group of them. Building it
// infers the missing or non-static types of `model` (docs/popart.md) and
// then gives the model its own types back; the model must outlive it.
class CostModel {
 public:
  CostModel(ir::Model& model, const Options& options);
  ~CostModel();
  CostModel(const CostModel&) = delete;
  CostModel& operator=(const CostModel&) = delete;

  size_t size() const;  // the main graph's nodes
  const ir::Node& node(size_t item) const;
  size_t unknownShapes() const { return unknownShapes_; }
  size_t unknownFlops() const { return unknownFlops_; }
  size_t functionCalls() const { return functionCalls_; }

  // The costs of a group of items added in graph order, one at a time: a
  // stage grown along the graph costs each step in about constant time.
  class Group {
   public:
    explicit Group(const CostModel& model);
    ~Group();
    Group(Group&&) noexcept;
    void add(size_t item);
    Costs costs() const;

   private:
    struct State;
    const CostModel* model_;
    std::unique_ptr<State> state_;
  };

 private:
  friend class Group;
  void collect(ir::Model& model);
  const Options options_;
  std::vector<Item> items_;
  size_t unknownShapes_ = 0, unknownFlops_ = 0, functionCalls_ = 0;
};

// Costs per pipeline stage (__pipeline_stage) and per IPU (__ipu_number) of
// the main graph's nodes, a Call or If counted with the nodes of its
// subgraphs. Types missing from the model are inferred first (in memory).
// {"training", "optimizer", "ipu_memory"?, "stages": [...], "ipus": [...],
//  "unplaced"?, "total", "bottleneck", "unknown_shapes", "unknown_flops",
//  "function_calls" (nodes calling model-local functions, not costed)}; each entry has
// nodes, weights, optimizer_state, activations, memory and flops (bytes, FLOPs).
nlohmann::json stageCosts(ir::Model& model, const Options& options);
// The same as a table, and the layers of each stage.
std::string renderStageCosts(const nlohmann::json& costs);
// The same as a picture (SVG): a column per stage (else IPU) with its memory
// as stacked bars against the IPU's, its FLOPs (the bottleneck marked), and
// the layers in it.
std::string stageCostsSvg(const nlohmann::json& costs);

}  // namespace graphrw::stage_cost
