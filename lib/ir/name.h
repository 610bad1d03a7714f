// Node and value names. A name is an 8-byte handle to its text, which lives in
// its model's NameArena: a million-node graph's two million names then cost
// their bytes and two more (a length byte, a '\0'), where a std::string in each
// node and value took 32 bytes inline and, past 15 characters
// (`/blocks.12345/t4`, every name of a real export), a 32-byte heap block besides.
//
// The text never moves and is never freed before its model: a view of a name
// stays valid after a rename (the old text stays in the arena). Renames and
// erased nodes leave their text behind; a model's arena holds every name it
// ever gave out, once per recent repeat (docs/architecture.md, "Names").
#pragma once

#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace graphrw::ir {

class Name {
 public:
  constexpr Name() = default;

  std::string_view view() const {
    if (!text_) return {};
    auto shortSize = static_cast<uint8_t>(text_[-1]);
    if (shortSize != kLongSize) return {text_, shortSize};
    uint32_t size;
    std::memcpy(&size, text_ - 1 - sizeof size, sizeof size);
    return {text_, size};
  }
  operator std::string_view() const { return view(); }  // NOLINT: a name reads as its text
  std::string str() const { return std::string(view()); }
  const char* c_str() const { return text_ ? text_ : ""; }  // the arena ends each with '\0'
  bool empty() const { return text_ == nullptr; }
  size_t size() const { return view().size(); }

  friend bool operator==(Name a, Name b) { return a.text_ == b.text_ || a.view() == b.view(); }
  friend bool operator==(Name a, std::string_view b) { return a.view() == b; }
  friend auto operator<=>(Name a, Name b) { return a.view() <=> b.view(); }
  friend auto operator<=>(Name a, std::string_view b) { return a.view() <=> b; }

  // Messages build strings around names: "node '" + n->name() + "'".
  friend std::string operator+(std::string&& a, Name b) { return std::move(a.append(b.view())); }
  friend std::string operator+(std::string_view a, Name b) { return std::string(a).append(b.view()); }
  friend std::string operator+(const char* a, Name b) { return std::string(a).append(b.view()); }
  friend std::string operator+(Name a, std::string_view b) { return a.str().append(b); }
  friend std::string operator+(Name a, const char* b) { return a.str().append(b); }
  friend std::string operator+(Name a, Name b) { return a.str().append(b.view()); }
  friend std::string operator+(Name a, char b) { return a.str() + b; }
  friend std::ostream& operator<<(std::ostream& os, Name n);

 private:
  friend class NameArena;
  explicit Name(const char* text) : text_(text) {}
  // Before the text: its size in a byte, or kLongSize after the size in 4 bytes
  // (a name of 255 bytes or more). After it, a '\0'. Null for "".
  static constexpr uint8_t kLongSize = 255;
  const char* text_ = nullptr;
};

// The names of one model, appended in chunks; freed with the model.
class NameArena {
 public:
  NameArena() = default;
  NameArena(const NameArena&) = delete;
  NameArena& operator=(const NameArena&) = delete;

  // `text` here: the handle of a recent equal name (a cache of 4,096 slots by
  // hash: the 50,000 callees an outline builds from one body share their
  // names), else a new copy. "" is the null name and takes nothing.
  Name make(std::string_view text);
  // What the arena took from the allocator, and how much of it names use.
  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  // Whether n's text lies here (the verifier's check that no node or value
  // holds a handle into another model's arena). O(log chunks).
  bool owns(Name n) const;

 private:
  Name append(std::string_view text);
  static constexpr size_t kRecentSlots = 4096;
  std::unique_ptr<const char*[]> recent_;  // allocated by the first make
  std::vector<std::unique_ptr<char[]>> chunks_;
  struct Range {
    const char* begin;
    const char* end;
  };
  std::vector<Range> ranges_;  // chunks_ by address, for owns()
  char* next_ = nullptr;
  size_t left_ = 0, capacity_ = 0, used_ = 0;
};

}  // namespace graphrw::ir

template <>
struct std::hash<graphrw::ir::Name> {
  size_t operator()(graphrw::ir::Name n) const { return std::hash<std::string_view>{}(n.view()); }
};
