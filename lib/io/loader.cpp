#include "io/loader.h"

#include <unistd.h>

#include "support/error.h"
#include "support/external_data.h"
#include "support/wire.h"

namespace fs = std::filesystem;

namespace graphrw {

using ir::buildModel;

std::unique_ptr<ir::Model> loadModel(std::shared_ptr<const Buffer> bytes, const fs::path& baseDir,
                                     const std::string& displayName, const LoadOptions& options) {
  try {
    if (bytes->size() == 0) badInput("empty file, not an ONNX model");
    wire::Stripped stripped;
    try {
      stripped = wire::stripPayloads(bytes, options.viewThreshold, /*splitMain=*/true);
    } catch (const std::runtime_error& e) {
      badInput(std::string("not an ONNX model (protobuf: ") + e.what() + ")");
    }
    if (stripped.bytes.size() > static_cast<size_t>(INT32_MAX))
      badInput("the model's graph is over 2 GB even without its tensor data");
    onnx::ModelProto proto;
    if (!proto.ParseFromString(stripped.bytes)) badInput("not an ONNX model (protobuf parse failed)");
    std::string().swap(stripped.bytes);  // parsed: free it before the IR is built
    if (!proto.has_graph()) badInput("not an ONNX model (no graph)");
    return buildModel(proto, stripped.payloads, std::make_shared<ir::ExternalFiles>(baseDir), &stripped.mainNodes,
                      &stripped.mainValueInfo);
  } catch (const Error& e) {
    fail(e.code(), displayName + ": " + e.what());
  }
}

std::unique_ptr<ir::Model> loadModel(const std::string& path, const LoadOptions& options) {
  // An ONNX file is one protobuf message: at most 2 GiB (large tensors go to external data).
  constexpr size_t kMaxModelBytes = (size_t{1} << 31) - 1;
  if (path == "-")
    return loadModel(Buffer::spoolFd(STDIN_FILENO, "<stdin>", kMaxModelBytes), fs::current_path(), "<stdin>", options);
  std::shared_ptr<const Buffer> bytes;
  try {
    bytes = Buffer::mapFile(path, kMaxModelBytes);
  } catch (const Error& e) {
    fail(e.code(), e.what());
  }
  fs::path dir = fs::path(path).parent_path();
  return loadModel(std::move(bytes), dir.empty() ? fs::path(".") : dir, path, options);
}

std::unique_ptr<ir::Model> loadModel(const onnx::ModelProto& proto, const fs::path& baseDir) {
  onnx::ModelProto copy = proto;
  return buildModel(copy, {}, std::make_shared<ir::ExternalFiles>(baseDir));
}

}  // namespace graphrw
