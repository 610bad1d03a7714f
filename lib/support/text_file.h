// Reading a small text file named by a user (a rule file, a template).
#pragma once

#include <cstdint>
#include <string>

namespace graphrw {

constexpr uintmax_t kMaxTextFileBytes = 16u << 20;

// The whole file, which must be a regular file of at most kMaxTextFileBytes. Throws Error(Usage) "PATH: cannot read the
// WHAT" when it cannot be opened or read.
std::string readTextFile(const std::string& path, const std::string& what);

}  // namespace graphrw
