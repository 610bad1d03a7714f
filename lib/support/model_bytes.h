// The serialized bytes of a ModelProto whose main-graph nodes are streamed in
// one at a time, assembled without ever copying them.
//
// The writer serializes every main-graph node as GraphProto field 1 into this
// buffer, then hands over the rest of the model (a ModelProto whose graph has
// no nodes). The fields before the graph and the graph's own tag and length go
// into room kept in front of the nodes; the graph's other fields and the
// model's later fields are appended after them. The nodes' bytes, the bulk of
// a large graph, are thus held once: the old way (a string of nodes, then the
// model copied around it) held them twice, and a string's doubling growth
// copies everything it holds at each step.
//
// The storage is a reservation of address space (anonymous, MAP_NORESERVE):
// it grows in place and only the pages written count against memory. Where the
// reservation cannot be made (strict overcommit, ulimit -v), a std::string is used.
//
// A large graph's nodes do not stay in memory: once the writer's
// WriteOptions::spillNodesAt bytes of them are held, spillNodes() splices
// their payloads in and moves them to the process's spill file
// (Buffer::spill), and the storage is used again. The writer then copies them
// file to file; lead() says where they go.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "support/buffer.h"
#include "support/wire.h"

namespace graphrw {

class ModelBytes {
 public:
  // `headroom`: bytes kept in front for the model's fields numbered below the
  // graph (7), its tag and its length. finish() copies once if it is short.
  // `reservation`: the address space to reserve (0: use a std::string).
  // Growing past a reservation throws std::length_error.
  static constexpr size_t kReservation = size_t{4} << 30;  // over protobuf's 2 GiB
  explicit ModelBytes(size_t headroom, size_t reservation = kReservation);
  ~ModelBytes();
  ModelBytes(const ModelBytes&) = delete;
  ModelBytes& operator=(const ModelBytes&) = delete;

  // Room for `n` more bytes at the end; commit(n) keeps them.
  char* extend(size_t n);
  void commit(size_t n) { size_ += n; }
  void append(std::string_view bytes);
  // Bytes appended so far and held in memory (the nodes, before finish()).
  size_t appended() const { return size_ - headroom_; }

  // Splices the nodes held in memory (GraphProto fields whose placeholders
  // index `payloads`) and moves them to the spill file, after any moved
  // before. `payloads` must outlive this object. Not after finish().
  void spillNodes(const std::vector<Bytes>& payloads);
  // The moved nodes: they go first in the main graph, ahead of view()'s
  // (wire::splicePayloads' `lead`). Empty when nothing was moved.
  const wire::GraphLead& lead() const { return lead_; }

  // `rest`: the serialized model whose graph (field 7) lacks the nodes.
  // `valueInfo`, when given, appends the graph's value_info entries (field 13)
  // straight into this buffer where protobuf would put them: after the
  // graph's fields numbered 1-12, before the later ones and unknown fields.
  // It may call spillNodes(): what is moved (the graph's earlier fields and
  // the entries so far) still comes first in the graph, in order.
  // Throws std::runtime_error when `rest` has no graph field.
  void finish(std::string_view rest, const std::function<void(ModelBytes&)>& valueInfo = {});
  // The model's bytes, valid until this object is destroyed.
  std::string_view view() const { return {data() + begin_, size_ - begin_}; }

 private:
  char* data() const { return mapped_ ? mapped_ : const_cast<char*>(heap_.data()); }
  void reserveBytes(size_t total);

  char* mapped_ = nullptr;  // the reservation, when it could be made
  size_t reserved_ = 0;
  std::string heap_;  // the storage otherwise (its size is the capacity in use)
  size_t headroom_;
  size_t size_;  // bytes in use, from the start of the storage
  size_t begin_ = 0;  // where the model starts once finished
  wire::GraphLead lead_;
  std::vector<Bytes> spilled_;  // owners of lead_'s spill-file pieces
};

}  // namespace graphrw
