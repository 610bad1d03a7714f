#include "support/external_data.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "support/error.h"

namespace fs = std::filesystem;

namespace graphrw::ir {

ExternalRef parseExternalRef(const onnx::TensorProto& tensor) {
  ExternalRef ref;
  bool haveLocation = false;
  for (const auto& entry : tensor.external_data()) {
    const std::string& key = entry.key();
    const std::string& value = entry.value();
    auto number = [&]() -> uint64_t {
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
        badInput("tensor '" + tensor.name() + "': external data " + key + " is not a number: '" + value + "'");
      try {
        return std::stoull(value);
      } catch (const std::exception&) {
        badInput("tensor '" + tensor.name() + "': external data " + key + " is out of range: '" + value + "'");
      }
    };
    if (key == "location") {
      ref.location = value;
      haveLocation = true;
    } else if (key == "offset") {
      ref.offset = number();
    } else if (key == "length") {
      ref.length = number();
    } else if (key == "checksum") {
      ref.checksum = value;
    }
  }
  if (!haveLocation || ref.location.empty()) badInput("tensor '" + tensor.name() + "': external data has no location");
  return ref;
}

ExternalFiles::ExternalFiles(fs::path baseDir) : baseDir_(std::move(baseDir)) {
  std::error_code ec;
  canonicalBase_ = fs::weakly_canonical(baseDir_.empty() ? fs::path(".") : baseDir_, ec);
  if (ec) canonicalBase_ = fs::absolute(baseDir_);
}

fs::path ExternalFiles::resolve(const std::string& location) const {
  auto refuse = [&](const std::string& why) {
    badInput("external data location '" + location + "' " + why + "; refusing to read outside the model's folder");
  };
  if (location.find('\0') != std::string::npos) refuse("contains a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) refuse("is absolute");
  for (const auto& part : rel)
    if (part == "..") refuse("contains '..'");
  fs::path full = (baseDir_.empty() ? fs::path(".") : baseDir_) / rel;
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(full, ec);
  if (ec) refuse("cannot be resolved (" + ec.message() + ")");
  // The resolved path must stay below the model's folder, links included.
  auto base = canonicalBase_.lexically_normal();
  auto mismatch = std::mismatch(base.begin(), base.end(), canonical.begin(), canonical.end());
  if (mismatch.first != base.end()) refuse("leaves the model's folder through a link");
  return canonical;
}

uint64_t ExternalFiles::check(const ExternalRef& ref, const std::string& tensorName) {
  uint64_t fileSize;
  {
    std::lock_guard lock(mutex_);
    auto it = sizes_.find(ref.location);
    if (it == sizes_.end()) {
      fs::path path = resolve(ref.location);
      struct stat st {};
      if (stat(path.c_str(), &st) != 0)
        badInput("tensor '" + tensorName + "': external data file '" + ref.location +
                 "' cannot be read: " + std::strerror(errno));
      if (!S_ISREG(st.st_mode))
        badInput("tensor '" + tensorName + "': external data '" + ref.location + "' is not a regular file");
      it = sizes_.emplace(ref.location, static_cast<uint64_t>(st.st_size)).first;
    }
    fileSize = it->second;
  }
  uint64_t length = ref.length.value_or(fileSize >= ref.offset ? fileSize - ref.offset : 0);
  if (ref.offset > fileSize || length > fileSize - ref.offset)
    badInput("tensor '" + tensorName + "': external data file '" + ref.location + "' is too short (" +
             std::to_string(fileSize) + " bytes; the tensor needs offset " + std::to_string(ref.offset) + " + length " +
             std::to_string(length) + ")");
  return length;
}

Bytes ExternalFiles::read(const ExternalRef& ref, const std::string& tensorName) {
  uint64_t length = check(ref, tensorName);
  std::shared_ptr<const Buffer> buffer;
  {
    std::lock_guard lock(mutex_);
    auto it = mapped_.find(ref.location);
    if (it == mapped_.end()) it = mapped_.emplace(ref.location, Buffer::mapFile(resolve(ref.location))).first;
    buffer = it->second;
  }
  if (ref.offset + length > buffer->size())
    badInput("tensor '" + tensorName + "': external data file '" + ref.location + "' changed while reading");
  Bytes b;
  b.data = buffer->data() + ref.offset;
  b.size = static_cast<size_t>(length);
  b.owner = std::move(buffer);
  return b;
}

}  // namespace graphrw::ir
