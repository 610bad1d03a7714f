// Reading a small text file named by a user (a rule file, a template).
#pragma once

#include <string>

namespace graphrw {

// The whole file. Throws Error(Usage) "PATH: cannot read the WHAT" when it
// cannot be opened or read.
std::string readTextFile(const std::string& path, const std::string& what);

}  // namespace graphrw
