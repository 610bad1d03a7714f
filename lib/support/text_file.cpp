#include "text_file.h"

#include <fstream>
#include <sstream>

#include "error.h"

namespace graphrw {

std::string readTextFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) usageError(path + ": cannot read the " + what);
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) usageError(path + ": cannot read the " + what);
  return ss.str();
}

}  // namespace graphrw
