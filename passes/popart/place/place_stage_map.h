// The pipeline stage of each node of the main graph, for the place pass: 4
// bytes a node in graph order, not a hash node each (a std::unordered_map of a
// million nodes took about 56 MB).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"
#include "support/error.h"

namespace graphrw {

class StageMap {
 public:
  // `nodes`: the main graph's nodes in order, outliving the map.
  explicit StageMap(const std::vector<ir::Node*>& nodes) : nodes_(nodes), stage_(nodes.size(), kNone) { stamp(); }

  // The stage of n; nothing when none is set or n is not one of the nodes.
  std::optional<size_t> find(const ir::Node* n) const {
    auto i = position(n);
    if (!i || stage_[*i] == kNone) return std::nullopt;
    return stage_[*i];
  }
  size_t at(const ir::Node* n) const {
    auto s = find(n);
    if (!s) fail(ExitCode::Internal, "place: " + ir::nodeLabel(*n) + " has no stage");
    return *s;
  }
  void set(const ir::Node* n, size_t stage) { setAt(positionOf(n), stage); }
  void setAt(size_t i, size_t stage) {
    if (stage_.at(i) == kNone) ++assigned_;
    stage_[i] = static_cast<uint32_t>(stage);
  }
  // Nodes with a stage.
  size_t size() const { return assigned_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  // A node's position is its Node::scratch, stamped here; stamped again when
  // another algorithm has used the scratch space since.
  std::optional<size_t> position(const ir::Node* n) const {
    if (!n || nodes_.empty()) return std::nullopt;
    auto at = [&]() -> std::optional<size_t> {
      if (n->scratch < nodes_.size() && nodes_[n->scratch] == n) return n->scratch;
      return std::nullopt;
    };
    if (auto i = at()) return i;
    if (n->graph() != nodes_.front()->graph()) return std::nullopt;  // inside a subgraph: not one of them
    stamp();
    return at();
  }
  size_t positionOf(const ir::Node* n) const {
    auto i = position(n);
    if (!i) fail(ExitCode::Internal, "place: " + ir::nodeLabel(*n) + " is not a node of the main graph");
    return *i;
  }
  void stamp() const {
    for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i]->scratch = static_cast<uint32_t>(i);
  }

  const std::vector<ir::Node*>& nodes_;
  std::vector<uint32_t> stage_;
  size_t assigned_ = 0;
};

}  // namespace graphrw
