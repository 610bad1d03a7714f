// A multiset of names with O(1) fresh-name generation. Counted, because input
// models may repeat node names and subgraphs may shadow outer value names.
// Names are remembered by 48 bits of their hash, not their text: a table of
// millions of names then costs 8-byte slots and no string copies. Two names
// with one such hash (about a 3% chance somewhere in a 4-million-name model)
// can only make fresh() pass over a free name, never hand out a taken one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include "support/flat_map.h"

namespace graphrw::ir {

// The table is built lazily: loading a model only for convert or inspect never
// pays for it. Its owner gives a filler that inserts every name the IR holds;
// the first query runs it, and from then on inserts and erases keep it exact.
class NameTable {
 public:
  void setFiller(std::function<void(NameTable&)> filler) { filler_ = std::move(filler); }
  bool built() const { return built_; }

  bool contains(std::string_view name) const {
    ensure();
    return names_.count(hashOf(name)) > 0;
  }
  // Records one more holder of a name (nothing to do before the table is built).
  void insert(std::string_view name) {
    if (built_) fill(name);
  }
  void erase(std::string_view name) {
    if (!built_) return;
    names_.remove(hashOf(name));
  }
  size_t size() const {
    ensure();
    return names_.size();
  }
  // Room for `more` names beyond those held now.
  void reserveMore(size_t more) {
    ensure();
    names_.reserve(names_.size() + more);
  }

  // Forgets every name until the next query builds the table again (from the
  // filler): what the table holds is then memory for no one, as while a
  // model is written after its passes.
  void release() {
    names_ = FlatHashCounter();
    counters_ = FlatStringMap<std::string, uint32_t>();
    built_ = false;
  }

  // `base` itself when free, else `base_1`, `base_2`, ... The counter per base
  // makes repeated requests for one base O(1) amortised, not a scan.
  std::string fresh(std::string_view base) {
    ensure();
    if (names_.add(hashOf(base)) == 0) return std::string(base);
    names_.remove(hashOf(base));
    uint32_t* next = counters_.emplace(base, 0).first;  // stable: only names_ changes below
    for (;;) {
      std::string candidate = std::string(base).append("_").append(std::to_string(++*next));
      uint64_t h = hashOf(candidate);
      if (names_.add(h) == 0) return candidate;
      names_.remove(h);
    }
  }

 private:
  // Builds the table on first use; const because building changes no answer.
  void ensure() const {
    if (built_) return;
    built_ = true;
    if (filler_) filler_(const_cast<NameTable&>(*this));
    names_.reserve(withRoom(names_.size()));
  }
  void fill(std::string_view name) { names_.add(hashOf(name)); }
  // Room for an eighth more names than `n` before a rebuild: the filler
  // reserves it up front (reserving twice the names after filling held the
  // filled table and one twice its size at once: 35 MB at 1.1M names).
  static size_t withRoom(size_t n) { return n + n / 8 + 1024; }
  static uint64_t hashOf(std::string_view name) { return std::hash<std::string_view>{}(name); }
  friend class NameFiller;
  mutable bool built_ = false;
  std::function<void(NameTable&)> filler_;
  mutable FlatHashCounter names_;
  FlatStringMap<std::string, uint32_t> counters_;
};

// Used by fillers: inserts while the table is being built.
class NameFiller {
 public:
  static void add(NameTable& t, std::string_view name) { t.fill(name); }
  static void reserve(NameTable& t, size_t n) { t.names_.reserve(NameTable::withRoom(n)); }
};

}  // namespace graphrw::ir
