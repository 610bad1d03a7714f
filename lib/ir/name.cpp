#include "ir/name.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <ostream>
#include <stdexcept>

namespace graphrw::ir {

std::ostream& operator<<(std::ostream& os, Name n) { return os << n.view(); }

Name NameArena::make(std::string_view text) {
  if (text.empty()) return {};
  if (!recent_) recent_ = std::make_unique<const char*[]>(kRecentSlots);  // zeroed: no name yet
  const char*& slot = recent_[std::hash<std::string_view>{}(text) % kRecentSlots];
  if (slot && Name(slot).view() == text) return Name(slot);
  Name made = append(text);
  slot = made.text_;
  return made;
}

bool NameArena::owns(Name n) const {
  if (n.empty()) return true;
  const char* p = n.text_;
  std::less<const char*> before;  // a total order on pointers into different blocks
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), p,
                             [&](const char* q, const Range& r) { return before(q, r.begin); });
  return it != ranges_.begin() && before(p, std::prev(it)->end);
}

Name NameArena::append(std::string_view text) {
  if (text.size() > std::numeric_limits<uint32_t>::max()) throw std::length_error("a name over 4 GB");
  const auto size = static_cast<uint32_t>(text.size());
  const bool isLong = size >= Name::kLongSize;
  const size_t header = isLong ? 1 + sizeof size : 1;
  const size_t need = header + size + 1;
  if (need > left_) {
    // Chunks double from 4 KB to 1 MB: a small model takes little, a large
    // one a chunk per some 50,000 names. A longer name gets a chunk of its own.
    size_t chunk = std::clamp<size_t>(capacity_, 4096, 1 << 20);
    chunk = std::max(chunk, need);
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(chunk));
    next_ = chunks_.back().get();
    Range r{next_, next_ + chunk};
    auto byBegin = [](const Range& a, const Range& b) { return std::less<const char*>{}(a.begin, b.begin); };
    ranges_.insert(std::upper_bound(ranges_.begin(), ranges_.end(), r, byBegin), r);
    left_ = chunk;
    capacity_ += chunk;
  }
  char* text0 = next_ + header;
  if (isLong) std::memcpy(next_, &size, sizeof size);
  text0[-1] = static_cast<char>(isLong ? Name::kLongSize : static_cast<uint8_t>(size));
  std::memcpy(text0, text.data(), size);
  text0[size] = '\0';
  next_ += need;
  left_ -= need;
  used_ += need;
  return Name(text0);
}

}  // namespace graphrw::ir
