// The cost model of pipeline stages and IPUs (docs/popart.md, "Stage
// costs"): what each IPU holds (weights; in training their gradients and
// optimizer state, and the activations kept for the backward pass) and the
// work each stage does (FLOPs of MatMul, Gemm, Conv and ConvTranspose), read
// from the static shapes of a placed model. `graphrw inspect --stages` prints it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/ir.h"

namespace graphrw::ir {
class Rewriter;
}

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

// What a compiled model showed the cost model to miss (docs/popart.md,
// "Calibrating the cost model"): per op, its FLOPs scaled (flops_scale), FLOPs
// per output element for an op the model counts none for (flops_per_element:
// Softmax, Gelu), the bytes of its outputs kept as activations scaled
// (activation_scale: 0 for an op PopART makes a view); per IPU, the memory its
// code and exchange buffers take (reserve), which the model's tensors cannot use.
struct OpCost {
  double flopsScale = 1, flopsPerElement = 0, activationScale = 1;
};
struct Calibration {
  uint64_t reserve = 0;
  std::map<std::string, OpCost> ops;  // "Softmax" (ai.onnx), "ai.graphcore::GroupNormalization"
};
// The JSON Schema of a calibration object: {"reserve": "150MiB", "ops": {"Softmax": {"flops_per_element": 8}}}.
const nlohmann::json& calibrationSchema();
// From a JSON value valid against calibrationSchema(); `what` names it in errors.
Calibration parseCalibration(const nlohmann::json& j, const std::string& what);
// From a JSON file holding one; throws Error(Usage) naming the file and the place in it.
Calibration loadCalibration(const std::filesystem::path& file, const std::string& what);
// The key of a node's op in Calibration::ops.
std::string opKey(const ir::Node& n);

struct Options {
  Optimizer optimizer = Optimizer::None;
  std::optional<uint64_t> ipuMemory;  // bytes per IPU: each IPU's "fits" and "missing"
  // A micro-batch of this many samples instead of the model's (docs/popart.md,
  // "Batch size"): activations and FLOPs that depend on the inputs scale by
  // batch / the model's; a symbolic batch dimension is set to it.
  std::optional<int64_t> batch;
  Calibration calibration;
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
  // With Options::batch: the leading dimension of the model's first input (after a symbolic one is set).
  int64_t modelBatch() const { return modelBatch_; }
  // The symbol of the model's batch dimension ("batch"; "?" unnamed) when it was not static; else "".
  const std::string& modelBatchSymbol() const { return modelBatchSymbol_; }
  // Calibration::ops keys no node in the model has (typos, or ops of another model).
  std::vector<std::string> unmatchedOps() const;

  // The costs of a group of items added in graph order, one at a time: a
  // stage grown along the graph costs each step in about constant time.
  class Group {
   public:
    explicit Group(const CostModel& model);
    ~Group();
    Group(Group&&) noexcept;
    void add(size_t item);
    // `stash`: the micro-batches whose kept activations the stage holds at
    // once in a training pipeline (stashDepth); 1 otherwise.
    Costs costs(uint64_t stash = 1) const;

   private:
    struct State;
    const CostModel* model_;
    std::unique_ptr<State> state_;
  };

 private:
  friend class Group;
  void collect(ir::Model& model);
  std::vector<std::pair<ir::Value*, onnx::TypeProto>> setBatch(ir::Rewriter& rw);
  uint64_t bytes(const ir::Value* v, double scale, bool* unknown) const;
  uint64_t scaled(const ir::Value* v, uint64_t amount) const;
  uint64_t flopsOf(const ir::Node& m, const OpCost& calibration);
  const Options options_;
  std::vector<Item> items_;
  size_t unknownShapes_ = 0, unknownFlops_ = 0, functionCalls_ = 0;
  int64_t modelBatch_ = 0;
  std::string modelBatchSymbol_;
  std::unordered_set<const ir::Value*> batched_;  // values that depend on the batch
  std::set<std::string> matchedOps_;
};

// PopART's stash depth of forward stage `stage` in a training pipeline whose
// forward stages run on `ipus` (per stage, the IPUs of its nodes): how many
// micro-batches' activations the stage holds at once, kept from its forward
// pass until its backward pass runs. The backward of stage s is stage
// 2(N-1) - s, and a tensor stashed in s is held for the independent stages
// from s to there (consecutive stages sharing an IPU run together):
// 2(N-1-s) + 1 with one IPU per stage, 1 for the last. PopART
// (graphcore/popart d2f20d78): willow/src/transforms/pipeline.cpp:1477-1481
// (getStashSize), :1922-1925 (the latest restoring stage), :985-1036
// (withStages); willow/src/transforms/autodiff/gradgrowerop.cpp:86-87 (a
// grad op's stage); willow/src/ir.cpp:2875-2885 (the largest stage).
uint64_t stashDepth(size_t stage, const std::vector<std::set<int64_t>>& ipus);

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
