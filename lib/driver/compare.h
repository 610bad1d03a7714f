// `graphrw compare A B`: both models under ONNX Runtime (the CPU runtime of the
// npm package onnxruntime-node) on the same inputs, every output compared.
// ai.graphcore ops have no CPU kernels: they are first mapped back to standard
// ONNX by their definitions (Calls inlined; Nop, Detach, Scale, Gelu, GeluErf,
// Swish, GroupNormalization written out).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace graphrw {

// A standard-ONNX copy of the model (the model itself is not changed). Throws
// Error(Unsupported) naming the node for an ai.graphcore op with no definition here.
onnx::ModelProto standardOnnx(ir::Model& model);

struct CompareOptions {
  double rtol = 1e-4, atol = 1e-5;  // |a - b| <= atol + rtol * |b|, as numpy.allclose
  uint32_t seed = 1;  // random inputs
  int intMax = 2;  // integer inputs drawn from [0, intMax)
  std::map<std::string, std::string> inputs;  // input name -> .npy file
  std::map<std::string, std::vector<int64_t>> shapes;  // input name -> the shape of its random data
  std::map<std::string, int64_t> dims;  // symbolic dimension -> size of the random inputs
  std::pair<double, double> valRange{-1.0, 1.0};  // random floating-point inputs: [first, second)
  std::map<std::string, std::pair<double, double>> valRanges;  // the same, per input
  bool equalNan = false;  // NaN agrees with NaN (numpy.allclose's equal_nan)
};

// One side of a comparison: the model and the file it was read from ("-" for
// stdin). ONNX Runtime reads the file itself when the model needs no mapping.
struct CompareModel {
  std::string file;
  std::unique_ptr<ir::Model> model;
};

// True when ONNX Runtime runs the model as it is: no ai.graphcore op and no
// `__` attribute (graphrw's and PopART's) in any graph or function.
bool runsAsIs(const ir::Model& model);

// Runs both models one after the other in one ONNX Runtime process (the IR
// models are released first); the JSON result has per output its dtype, shape, largest
// and mean absolute and relative difference (over elements finite on both
// sides), the elements outside tolerance, NaN and Inf counts per side, the
// worst element's index and values, a 10-bin histogram of the absolute
// differences, whether it is within tolerance; and "ok". Throws Error(Usage) when ONNX Runtime is not installed (saying
// how to install it), Error(BadInput) when a model cannot run.
nlohmann::json compareModels(CompareModel a, CompareModel b, const CompareOptions& options);

// compareModels' result as text: the inputs used, per output its type and
// largest differences (or what differs), and the verdict.
std::string renderComparison(const nlohmann::json& result, const CompareOptions& options);

// Where onnxruntime-node is (a folder holding node_modules/onnxruntime-node):
// $GRAPHRW_ORT_DIR, PREFIX/lib/graphrw beside an installed graphrw, the
// current folder or one above it, or npm's global folder.
std::string findOnnxRuntime();

}  // namespace graphrw
