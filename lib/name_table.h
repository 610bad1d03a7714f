// A multiset of names with O(1) fresh-name generation. Counted, because input
// models may repeat node names and subgraphs may shadow outer value names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace graphrw::ir {

class NameTable {
 public:
  bool contains(const std::string& name) const { return names_.count(name) != 0; }
  // Records one more holder of a name; returns false when it was taken already.
  bool insert(const std::string& name) { return names_[name]++ == 0; }
  void erase(const std::string& name) {
    auto it = names_.find(name);
    if (it != names_.end() && --it->second == 0) names_.erase(it);
  }
  size_t size() const { return names_.size(); }

  // `base` itself when free, else `base_1`, `base_2`, ... The counter per base
  // makes repeated requests for one base O(1) amortised, not a scan.
  std::string fresh(const std::string& base) {
    if (insert(base)) return base;
    names_[base]--;
    uint32_t& next = counters_[base];
    for (;;) {
      std::string candidate = base + "_" + std::to_string(++next);
      if (insert(candidate)) return candidate;
      names_[candidate]--;
    }
  }

 private:
  std::unordered_map<std::string, uint32_t> names_;
  std::unordered_map<std::string, uint32_t> counters_;
};

}  // namespace graphrw::ir
