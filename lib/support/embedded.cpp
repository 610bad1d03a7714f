#include "support/embedded.h"

#include <stdexcept>
#include <string>

namespace graphrw::embedded {

std::string_view file(std::string_view path) {
  for (const File& f : files())
    if (f.path == path) return f.text;
  throw std::logic_error("no embedded file schemas/" + std::string(path));
}

}  // namespace graphrw::embedded
