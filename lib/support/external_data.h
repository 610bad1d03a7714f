// External data: tensors whose bytes live in files beside the model
// (TensorProto.data_location = EXTERNAL). Locations are untrusted input: one
// that is absolute, contains "..", or resolves (through links) outside the
// model's folder is refused (CVE-2022-25882, CVE-2024-27318).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "support/buffer.h"

namespace graphrw::ir {

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  std::string checksum;
};

// Reads the external_data key/value entries of a tensor. Throws Error(BadInput).
ExternalRef parseExternalRef(const onnx::TensorProto& tensor);

class ExternalFiles {
 public:
  explicit ExternalFiles(std::filesystem::path baseDir);
  const std::filesystem::path& baseDir() const { return baseDir_; }

  // The checked path of a location: throws Error(BadInput) naming it when it
  // is absolute, has a ".." part, or leaves the base folder through a link.
  std::filesystem::path resolve(const std::string& location) const;
  // Checks the file exists and holds [offset, offset + length). Throws Error(BadInput).
  uint64_t check(const ExternalRef& ref, const std::string& tensorName);
  // Maps the file on first use and returns a view of the tensor's bytes.
  Bytes read(const ExternalRef& ref, const std::string& tensorName);

 private:
  std::filesystem::path baseDir_;
  std::filesystem::path canonicalBase_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const Buffer>> mapped_;
  std::map<std::string, uint64_t> sizes_;
};

}  // namespace graphrw::ir
