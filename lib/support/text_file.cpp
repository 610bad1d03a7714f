#include "support/text_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace graphrw {

std::string readTextFile(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (!std::filesystem::exists(path, ec)) usageError(path + ": cannot read the " + what + ": no such file");
    usageError(path + ": cannot read the " + what + ": not a regular file");
  }
  if (std::filesystem::file_size(path, ec) > kMaxTextFileBytes)
    usageError(path + ": the " + what + " is over " + std::to_string(kMaxTextFileBytes >> 20) + " MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) usageError(path + ": cannot read the " + what);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) usageError(path + ": cannot read the " + what);
  return ss.str();
}

}  // namespace graphrw
