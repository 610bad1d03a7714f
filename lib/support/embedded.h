// The files below schemas/ (rule-file and pass schemas, ai.graphcore op data,
// PopART attribute data), compiled into the binary at build time by
// cmake/EmbedFiles.cmake: adding a file there needs no code.
#pragma once

#include <span>
#include <string_view>

namespace graphrw::embedded {

struct File {
  std::string_view path;  // below schemas/: "passes/expand.schema.json"
  std::string_view text;
};

std::span<const File> files();
// The text of one file; throws std::logic_error (a build defect) when it is absent.
std::string_view file(std::string_view path);

}  // namespace graphrw::embedded
