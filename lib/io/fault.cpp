#include "io/fault.h"

#include <csignal>
#include <cstdlib>
#include <string>
#include <string_view>

namespace graphrw::fault {
namespace {

struct Plan {
  std::string point;  // "write", "rename", "renamed" or "" (none)
  unsigned long long bytes = 0;  // for "write"
  unsigned long long written = 0;
};

Plan& plan() {
  static Plan p = [] {
    Plan made;
    const char* env = std::getenv("GRAPHRW_FAULT");
    if (!env) return made;
    std::string_view spec(env);
    if (spec.starts_with("write:")) {
      made.point = "write";
      made.bytes = std::strtoull(env + 6, nullptr, 10);
    } else {
      made.point = spec;
    }
    return made;
  }();
  return p;
}

[[noreturn]] void die() {
  std::raise(SIGKILL);
  std::abort();  // not reached
}

}  // namespace

void wrote(size_t bytes) {
  Plan& p = plan();
  if (p.point.empty()) return;
  p.written += bytes;
  if (p.point == "write" && p.written >= p.bytes) die();
}

void at(const char* point) {
  Plan& p = plan();
  if (!p.point.empty() && p.point == point) die();
}

}  // namespace graphrw::fault
