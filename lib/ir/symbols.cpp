// The process-wide tables of op types, domains and overloads that nodes point
// into, and the pools of exact-size blocks that nodes and values come from.
#include <mutex>
#include <unordered_set>

#include "ir/ir.h"

namespace graphrw::ir {

const std::string& internSymbol(std::string_view s) {
  static const std::string empty;
  if (s.empty()) return empty;
  // Looked up by the view itself: a symbol already held (nearly every call,
  // once per node loaded) costs no string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  static std::mutex mutex;
  // Never destroyed: nodes of models alive at exit may still point into it.
  static auto* table = new std::unordered_set<std::string, Hash, std::equal_to<>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = table->find(s); it != table->end()) return *it;
  return *table->emplace(s).first;
}

const OpSymbol& internOp(std::string_view opType, std::string_view domain, std::string_view overload) {
  static const OpSymbol none{&internSymbol({}), &internSymbol({}), &internSymbol({})};
  if (opType.empty() && domain.empty() && overload.empty()) return none;
  OpSymbol key{&internSymbol(opType), &internSymbol(domain), &internSymbol(overload)};
  struct Hash {
    size_t operator()(const OpSymbol& o) const {
      auto h = std::hash<const void*>{};
      return h(o.opType) ^ (h(o.domain) * 31) ^ (h(o.overload) * 131);
    }
  };
  struct Eq {
    bool operator()(const OpSymbol& a, const OpSymbol& b) const {
      return a.opType == b.opType && a.domain == b.domain && a.overload == b.overload;
    }
  };
  static std::mutex mutex;
  // Never destroyed, like internSymbol's table; its elements never move.
  static auto* table = new std::unordered_set<OpSymbol, Hash, Eq>();
  std::lock_guard<std::mutex> lock(mutex);
  return *table->insert(key).first;
}

// Nodes and values come from pools of their exact size (no allocator header):
// keep them small, they are a million-node graph's largest part.
static_assert(sizeof(Value) <= 72, "Value stays 72 bytes");
static_assert(sizeof(Node) <= 128, "Node stays 128 bytes");
using ValuePool = FixedPool<sizeof(Value)>;
using NodePool = FixedPool<sizeof(Node)>;

void* Value::operator new(size_t size) {
  if (size != sizeof(Value)) throw std::bad_alloc();  // no class derives from Value
  return ValuePool::allocate();
}
void Value::operator delete(void* p, size_t) noexcept { ValuePool::deallocate(p); }

void* Node::operator new(size_t size) {
  if (size != sizeof(Node)) throw std::bad_alloc();  // no class derives from Node
  return NodePool::allocate();
}
void Node::operator delete(void* p, size_t) noexcept { NodePool::deallocate(p); }

struct FreedNodeHoldState {
  NodePool::Hold hold;
};
FreedNodeHold::FreedNodeHold() : state_(std::make_unique<FreedNodeHoldState>()) {}
FreedNodeHold::~FreedNodeHold() = default;

}  // namespace graphrw::ir
