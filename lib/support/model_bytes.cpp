#include "support/model_bytes.h"

#include <sys/mman.h>

#include <cstring>
#include <stdexcept>

#include "support/wire.h"

namespace graphrw {

ModelBytes::ModelBytes(size_t headroom, size_t reservation) : headroom_(headroom), size_(headroom) {
  // Where the reservation cannot be made (ulimit -v, 32-bit), a std::string holds the bytes.
  if (sizeof(void*) >= 8 && reservation > headroom) {
    void* p = mmap(nullptr, reservation, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      mapped_ = static_cast<char*>(p);
      reserved_ = reservation;
    }
  }
  if (!mapped_) heap_.resize(headroom);
}

ModelBytes::~ModelBytes() {
  if (mapped_) munmap(mapped_, reserved_);
}

void ModelBytes::reserveBytes(size_t total) {
  if (mapped_) {
    if (total > reserved_)
      throw std::length_error("the serialized model exceeds " + std::to_string(reserved_) + " bytes");
    return;
  }
  if (total > heap_.size()) heap_.resize(std::max(total, heap_.size() + heap_.size() / 2));
}

char* ModelBytes::extend(size_t n) {
  reserveBytes(size_ + n);
  return data() + size_;
}

void ModelBytes::append(std::string_view bytes) {
  std::memcpy(extend(bytes.size()), bytes.data(), bytes.size());
  commit(bytes.size());
}

void ModelBytes::spillNodes(const std::vector<Bytes>& payloads) {
  if (appended() == 0) return;
  wire::Spliced spliced = wire::spliceGraphFields({data() + headroom_, appended()}, payloads);
  // Runs of bytes in memory go to the spill file; payloads already in a file stay where they are.
  std::string run;
  auto moveRun = [&] {
    if (run.empty()) return;
    Bytes moved = Buffer::spill(run, "serialized nodes");
    lead_.pieces.push_back(wire::payloadPiece(moved));
    spilled_.push_back(std::move(moved));
    run.clear();
  };
  for (const wire::Piece& piece : spliced.pieces) {
    if (piece.file) {
      moveRun();
      lead_.pieces.push_back(piece);
    } else {
      run.append(piece.data, piece.size);
    }
  }
  moveRun();
  lead_.size += spliced.size;
  size_ = headroom_;
}

void ModelBytes::finish(std::string_view rest, const std::function<void(ModelBytes&)>& valueInfo) {
  wire::Reader r(rest);
  wire::Field f;
  bool found = false;
  while (!found && r.next(f)) found = f.number == 7 && f.type == wire::WireType::Len;
  if (!found) throw std::runtime_error("the model has no graph to put its nodes in");
  std::string_view suffix = rest.substr(static_cast<size_t>(f.end - rest.data()));
  std::string_view graph = f.payload;
  size_t split = graph.size();
  if (valueInfo) {
    // GraphProto's known fields below value_info (13): node, name,
    // initializer, doc_string, input, output. Protobuf writes known fields in
    // number order and unknown ones last, so value_info goes before the first
    // field that is not one of these.
    wire::Reader g(graph);
    wire::Field gf;
    split = 0;
    while (g.next(gf)) {
      const bool before = gf.number == 1 || gf.number == 2 || gf.number == 5 || (gf.number >= 10 && gf.number <= 12);
      if (!before) break;
      split = static_cast<size_t>(gf.end - graph.data());
    }
  }
  append(graph.substr(0, split));
  if (valueInfo) valueInfo(*this);
  append(graph.substr(split));
  std::string header(rest.substr(0, static_cast<size_t>(f.begin - rest.data())));
  wire::appendTag(header, 7, wire::WireType::Len);
  wire::appendVarint(header, appended());
  append(suffix);
  if (header.size() <= headroom_) {
    begin_ = headroom_ - header.size();
    std::memcpy(data() + begin_, header.data(), header.size());
    return;
  }
  // The fields before the graph outgrew the room kept for them: one copy.
  std::string whole = header;
  whole.append(data() + headroom_, size_ - headroom_);
  if (mapped_) munmap(mapped_, reserved_);
  mapped_ = nullptr;
  reserved_ = 0;
  heap_ = std::move(whole);
  size_ = heap_.size();
  begin_ = 0;
}

}  // namespace graphrw
