// graphrw IR -> ONNX. Payload views are streamed from their mapping to the
// output, in protobuf's own field order, so the bytes are what protobuf itself
// would serialize, and the tensor data is never copied into heap memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace graphrw {

enum class ExternalMode {
  Keep,  // external tensors stay external (data rewritten beside the output when it moves folder)
  Embed,  // every tensor is written into the model
  Move,  // tensors of at least `threshold` bytes go to one external data file
};

struct WriteOptions {
  ExternalMode external = ExternalMode::Keep;
  std::string externalFile;  // Move: the data file, relative to the output's folder
  uint64_t threshold = 1024;
  // Files the command read (its input models): an external data file may not replace one.
  std::vector<std::filesystem::path> protect;
  // Main-graph node bytes held in memory before they move to the spill file
  // (support/model_bytes.h): a large graph's serialized nodes then cost page
  // cache, not memory. Tests lower it; 0 never moves them.
  size_t spillNodesAt = size_t{8} << 20;
};

struct WriteResult {
  uint64_t modelBytes = 0;
  uint64_t externalBytes = 0;
  std::vector<std::string> dataFiles;  // external data files written
};

// `path` "-" writes to standard output. Throws Error(OutputFailed) or
// Error(Usage) (an option that cannot work for this model), leaving every
// existing file as it was.
WriteResult writeModel(ir::Model& model, const std::string& path, const WriteOptions& options = {});

// The model as one protobuf message with every payload copied in (external
// tensors stay external). For the checker, shape inference and tests.
onnx::ModelProto toProto(const ir::Model& model);
// The same without tensor payloads of 64 bytes or more (their raw_data is left
// empty): for shape inference, which needs types and shapes, not weights.
// `out` may live on a protobuf Arena (large models: no per-message frees).
void buildProtoWithoutPayloads(const ir::Model& model, onnx::ModelProto& out);

// One function as a FunctionProto with payloads copied in.
onnx::FunctionProto functionToProto(const ir::Function& function);
// One node as a NodeProto (subgraphs and tensors copied in).
onnx::NodeProto nodeToProto(const ir::Node& node);

// The model's bytes as written to a file (external tensors kept as they are).
std::string serialize(const ir::Model& model);

}  // namespace graphrw
