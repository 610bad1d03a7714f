// ONNX file (or stdin) -> graphrw IR. Large tensor payloads stay views into the
// memory-mapped input; external data is checked at load and mapped on first use.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "ir/builder.h"
#include "ir/ir.h"
#include "support/buffer.h"

namespace graphrw {

struct LoadOptions {
  // raw_data of at least this many bytes is kept as a view, smaller ones are copied.
  size_t viewThreshold = 64;
};

// `path` "-" reads standard input (external data then resolves against the
// working directory). Throws Error(BadInput) with one line naming the file.
std::unique_ptr<ir::Model> loadModel(const std::string& path, const LoadOptions& options = {});

// Loads from bytes already in memory; `baseDir` is where external data is looked up.
std::unique_ptr<ir::Model> loadModel(std::shared_ptr<const Buffer> bytes, const std::filesystem::path& baseDir,
                                     const std::string& displayName, const LoadOptions& options = {});

// Same, from a protobuf message (tests, the text parser). Copies the message.
std::unique_ptr<ir::Model> loadModel(const onnx::ModelProto& proto, const std::filesystem::path& baseDir = ".");

}  // namespace graphrw
