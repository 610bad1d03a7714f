#include "support/wire.h"

#include <cstring>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace graphrw::wire {
namespace {

// The message types on the paths from ModelProto to a TensorProto's raw_data.
enum class Kind { Other, Model, Graph, Function, Node, Attribute, Tensor };

Kind childKind(Kind parent, uint32_t number) {
  switch (parent) {
    case Kind::Model:
      if (number == 7) return Kind::Graph;  // graph
      if (number == 25) return Kind::Function;  // functions
      return Kind::Other;
    case Kind::Graph:
      if (number == 1) return Kind::Node;  // node
      if (number == 5) return Kind::Tensor;  // initializer
      return Kind::Other;
    case Kind::Function:
      return number == 7 ? Kind::Node : Kind::Other;  // node
    case Kind::Node:
      return number == 5 ? Kind::Attribute : Kind::Other;  // attribute
    case Kind::Attribute:
      if (number == 5 || number == 10) return Kind::Tensor;  // t, tensors
      if (number == 6 || number == 11) return Kind::Graph;  // g, graphs
      return Kind::Other;
    default:
      return Kind::Other;
  }
}

constexpr uint32_t kRawData = 9;
constexpr uint32_t kGraphValueInfo = 13;
constexpr int kMaxDepth = 100;

}  // namespace

uint64_t Reader::readVarint() {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p_ >= end_) throw std::runtime_error("truncated varint");
    auto byte = static_cast<uint8_t>(*p_++);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  throw std::runtime_error("malformed varint");
}

bool Reader::next(Field& f) {
  if (p_ >= end_) return false;
  f.begin = p_;
  uint64_t tag = readVarint();
  f.number = static_cast<uint32_t>(tag >> 3);
  if (f.number == 0 || (tag >> 3) > 0x1fffffff) throw std::runtime_error("invalid field number");
  auto type = static_cast<uint8_t>(tag & 7);
  switch (type) {
    case 0:
      f.type = WireType::Varint;
      f.varint = readVarint();
      break;
    case 1:
    case 5: {
      size_t n = type == 1 ? 8 : 4;
      if (static_cast<size_t>(end_ - p_) < n) throw std::runtime_error("truncated fixed-width field");
      f.type = type == 1 ? WireType::Fixed64 : WireType::Fixed32;
      f.payload = std::string_view(p_, n);
      p_ += n;
      break;
    }
    case 2: {
      uint64_t n = readVarint();
      if (n > static_cast<uint64_t>(end_ - p_)) throw std::runtime_error("truncated length-delimited field");
      f.type = WireType::Len;
      f.payload = std::string_view(p_, static_cast<size_t>(n));
      p_ += n;
      break;
    }
    case 3: {  // a group: skip to its matching end tag, iteratively (nesting is attacker-controlled)
      f.type = WireType::StartGroup;
      int depth = 1;
      while (depth > 0) {
        if (p_ >= end_) throw std::runtime_error("unterminated group");
        uint64_t innerTag = readVarint();
        if ((innerTag >> 3) == 0 || (innerTag >> 3) > 0x1fffffff) throw std::runtime_error("invalid field number");
        switch (innerTag & 7) {
          case 0:
            readVarint();
            break;
          case 1:
          case 5: {
            size_t n = (innerTag & 7) == 1 ? 8 : 4;
            if (static_cast<size_t>(end_ - p_) < n) throw std::runtime_error("truncated fixed-width field");
            p_ += n;
            break;
          }
          case 2: {
            uint64_t n = readVarint();
            if (n > static_cast<uint64_t>(end_ - p_)) throw std::runtime_error("truncated length-delimited field");
            p_ += n;
            break;
          }
          case 3:
            if (++depth > kMaxDepth) throw std::runtime_error("groups nested too deeply");
            break;
          case 4:
            --depth;
            break;
          default:
            throw std::runtime_error("invalid wire type " + std::to_string(innerTag & 7));
        }
      }
      break;
    }
    case 4:
      f.type = WireType::EndGroup;
      break;
    default:
      throw std::runtime_error("invalid wire type " + std::to_string(type));
  }
  f.end = p_;
  return true;
}

void appendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void appendTag(std::string& out, uint32_t number, WireType type) {
  appendVarint(out, (static_cast<uint64_t>(number) << 3) | static_cast<uint8_t>(type));
}

void appendLenField(std::string& out, uint32_t number, std::string_view value) {
  appendTag(out, number, WireType::Len);
  appendVarint(out, value.size());
  out.append(value);
}

// ---------------------------------------------------------------------------
// Loader side: strip payloads.

namespace {

class Stripper {
 public:
  Stripper(const std::shared_ptr<const Buffer>& source, size_t threshold, bool splitMain, Stripped& result)
      : source_(source), threshold_(threshold), splitMain_(splitMain), result_(result) {}

  void message(std::string_view bytes, Kind kind, std::string& out, int depth) {
    if (depth > kMaxDepth) throw std::runtime_error("messages nested too deeply");
    const bool mainGraph = kind == Kind::Graph && depth == 1 && splitMain_;
    if (mainGraph) {
      result_.mainNodes.beginGraph(source_, bytes);
      result_.mainValueInfo.beginGraph(source_, bytes);
    }
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.type != WireType::Len) {
        // The file's own fields with the placeholders' numbers would be read as
        // placeholders (another tensor's bytes): dropped.
        if (kind == Kind::Tensor && (f.number == kPayloadField || f.number == kPayloadCountField)) continue;
        out.append(f.begin, f.end);
        continue;
      }
      if (kind == Kind::Tensor && f.number == kRawData && f.payload.size() >= threshold_) {
        Bytes view;
        view.owner = source_;
        view.data = f.payload.data();
        view.size = f.payload.size();
        appendTag(out, kPayloadField, WireType::Varint);
        appendVarint(out, result_.payloads.size());
        result_.payloads.push_back(std::move(view));
        source_->releaseBefore(f.payload.data() + f.payload.size());
        continue;
      }
      if (mainGraph && f.number == kGraphValueInfo) {  // holds no tensor: read where it lies
        result_.mainValueInfo.add(f.begin, std::nullopt);
        source_->releaseBefore(f.payload.data() + f.payload.size());
        continue;
      }
      Kind child = childKind(kind, f.number);
      if (child == Kind::Other) {
        out.append(f.begin, f.end);
        continue;
      }
      if (mainGraph && child == Kind::Node) {
        splitNode(f.begin, f.payload, depth + 1);
        continue;
      }
      std::string inner;
      inner.reserve(std::min<size_t>(f.payload.size(), 1 << 20));
      message(f.payload, child, inner, depth + 1);
      appendTag(out, f.number, WireType::Len);
      appendVarint(out, inner.size());
      out.append(inner);
    }
  }

 private:
  // A main-graph node: a view of its bytes when it holds no payload (almost
  // every node), its stripped copy otherwise.
  void splitNode(const char* field, std::string_view bytes, int depth) {
    size_t payloads = result_.payloads.size();
    scratch_.clear();
    message(bytes, Kind::Node, scratch_, depth);
    if (result_.payloads.size() == payloads)
      result_.mainNodes.add(field, std::nullopt);
    else
      result_.mainNodes.add(field, scratch_);
    // The loader reads the node again; until then its pages need not stay.
    source_->releaseBefore(bytes.data() + bytes.size());
  }

  const std::shared_ptr<const Buffer>& source_;
  size_t threshold_;
  bool splitMain_;
  Stripped& result_;
  std::string scratch_;
};

}  // namespace

void MainFields::beginGraph(std::shared_ptr<const Buffer> source, std::string_view graph) {
  source_ = std::move(source);
  if (!graphs_.empty() && !seen_) graphs_.pop_back();  // the last one held none: next() skips it
  graphs_.push_back(graph);
  seen_ = false;
}

void MainFields::add(const char* field, std::optional<std::string> copy) {
  if (!seen_) {
    // next() walks this occurrence from its first element: the fields before
    // it (a million nodes before the value_info entries) are not read again.
    std::string_view& g = graphs_.back();
    g = std::string_view(field, static_cast<size_t>(g.data() + g.size() - field));
    seen_ = true;
  }
  if (copy) {
    copies_.push_back(std::move(*copy));
    copyAt_.push_back(count_);
  }
  ++count_;
}

std::string_view MainFields::next() {
  if (index_ >= count_) throw std::out_of_range("MainFields::next past the last element");
  Field f;
  for (;;) {
    if (!reader_) reader_.emplace(graphs_.at(graph_++));
    if (!reader_->next(f)) {
      reader_.reset();
      continue;
    }
    // The fields the stripper split off: this one, length-delimited.
    if (f.number == number_ && f.type == WireType::Len) break;
  }
  // The pages before this node were parsed with the previous ones.
  if (source_) source_->releaseBefore(f.begin);
  done_ = f.end;
  size_t index = index_++;
  if (copy_ < copyAt_.size() && copyAt_[copy_] == index) return copies_[copy_++];
  return f.payload;
}

void MainFields::release() const {
  if (source_ && done_) source_->releaseBefore(done_);
}

Stripped stripPayloads(const std::shared_ptr<const Buffer>& source, size_t threshold, bool splitMain) {
  Stripped result;
  Stripper stripper(source, threshold == 0 ? 1 : threshold, splitMain, result);
  result.bytes.reserve(std::min<size_t>(source->size(), 64 << 20));
  stripper.message(source->view(), Kind::Model, result.bytes, 0);
  return result;
}

// ---------------------------------------------------------------------------
// Writer side: splice payloads back.

namespace {

class Splicer {
 public:
  Splicer(const std::vector<Bytes>& payloads, Spliced& out, const GraphLead* lead)
      : payloads_(payloads), out_(out), lead_(lead) {}

  void push(const char* data, size_t size) { push(Piece{data, size}); }
  void push(const Piece& piece) {
    if (piece.size == 0) return;
    auto& pieces = out_.pieces;
    if (!pieces.empty() && pieces.back().file == piece.file && pieces.back().data + pieces.back().size == piece.data)
      pieces.back().size += piece.size;
    else
      pieces.push_back(piece);
  }

  void pushHeader(uint32_t number, uint64_t length) {
    std::string& h = out_.headers.emplace_back();
    appendTag(h, number, WireType::Len);
    appendVarint(h, length);
    push(h.data(), h.size());
  }

  // Emits `bytes` (a message of `kind`) and returns its new length.
  uint64_t message(std::string_view bytes, Kind kind) {
    if (kind == Kind::Tensor) return tensor(bytes);
    uint64_t length = 0;
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      Kind child = f.type == WireType::Len ? childKind(kind, f.number) : Kind::Other;
      const GraphLead* lead = child == Kind::Graph && kind == Kind::Model ? std::exchange(lead_, nullptr) : nullptr;
      if (!lead && (child == Kind::Other || !containsPlaceholder(f.payload, child))) {
        push(f.begin, static_cast<size_t>(f.end - f.begin));
        length += static_cast<uint64_t>(f.end - f.begin);
        continue;
      }
      length += rewritten(f, child, lead);
    }
    return length;
  }

 private:
  // Emits a length-delimited field whose length changes (its payloads are
  // spliced in, or `lead` goes first); returns the field's new size.
  uint64_t rewritten(const Field& f, Kind child, const GraphLead* lead) {
    // The child's new length is needed before its bytes: emit into a scratch list first.
    std::vector<Piece> saved;
    saved.swap(out_.pieces);
    uint64_t inner = message(f.payload, child);
    std::vector<Piece> childPieces;
    childPieces.swap(out_.pieces);
    out_.pieces.swap(saved);
    if (lead) inner += lead->size;
    pushHeader(f.number, inner);
    if (lead)
      for (const Piece& p : lead->pieces) push(p);
    for (const Piece& p : childPieces) push(p);
    return out_.headers.back().size() + inner;
  }

  uint64_t tensor(std::string_view bytes) {
    std::vector<Field> fields;
    std::optional<uint64_t> index;
    uint64_t count = 1;
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (f.number == kPayloadField && f.type == WireType::Varint)
        index = f.varint;
      else if (f.number == kPayloadCountField && f.type == WireType::Varint)
        count = f.varint;
      else
        fields.push_back(f);
    }
    uint64_t length = 0;
    bool placed = !index.has_value();
    auto place = [&] {
      if (*index > payloads_.size() || count > payloads_.size() - *index)
        throw std::runtime_error("payload placeholder out of range");
      uint64_t size = 0;
      for (uint64_t i = 0; i < count; ++i) size += payloads_[*index + i].size;
      pushHeader(kRawData, size);
      for (uint64_t i = 0; i < count; ++i) push(payloadPiece(payloads_[*index + i]));
      length += out_.headers.back().size() + size;
      placed = true;
    };
    for (const Field& field : fields) {
      if (!placed && field.number > kRawData) place();
      push(field.begin, static_cast<size_t>(field.end - field.begin));
      length += static_cast<uint64_t>(field.end - field.begin);
    }
    if (!placed) place();
    return length;
  }

  // Whether a placeholder occurs anywhere below this message. Walks only the
  // paths that can lead to a tensor, so it is cheap for nodes without tensors.
  bool containsPlaceholder(std::string_view bytes, Kind kind) {
    Reader r(bytes);
    Field f;
    while (r.next(f)) {
      if (kind == Kind::Tensor) {
        if (f.number == kPayloadField) return true;
        continue;
      }
      if (f.type != WireType::Len) continue;
      Kind child = childKind(kind, f.number);
      if (child != Kind::Other && containsPlaceholder(f.payload, child)) return true;
    }
    return false;
  }

  const std::vector<Bytes>& payloads_;
  Spliced& out_;
  const GraphLead* lead_;
};

}  // namespace

Piece payloadPiece(const Bytes& bytes) {
  Piece p{bytes.data, bytes.size};
  if (bytes.owner && bytes.owner->fd() >= 0) {
    p.file = bytes.owner.get();
    p.offset = bytes.owner->fileOffset() + static_cast<uint64_t>(bytes.data - bytes.owner->data());
  }
  return p;
}

std::vector<Piece> coalesce(const std::vector<Piece>& pieces, size_t maxCompare) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece p : pieces) {
    if (p.file) {
      // Offsets in the buffer (pieces hold file offsets; a spilled buffer maps part of its file).
      auto inBuffer = [](const Piece& q) { return q.offset - q.file->fileOffset(); };
      while (!out.empty() && !out.back().file && out.back().size <= inBuffer(p) && out.back().size <= maxCompare &&
             p.file->equalAt(inBuffer(p) - out.back().size, out.back().data, out.back().size)) {
        p.offset -= out.back().size;
        p.data -= out.back().size;
        p.size += out.back().size;
        out.pop_back();
      }
      if (!out.empty() && out.back().file == p.file && out.back().offset + out.back().size == p.offset) {
        out.back().size += p.size;
        continue;
      }
      out.push_back(p);
      continue;
    }
    if (!out.empty() && out.back().file && p.size <= maxCompare) {
      Piece& f = out.back();
      uint64_t end = f.offset - f.file->fileOffset() + f.size;
      if (f.file->equalAt(end, p.data, p.size)) {
        f.size += p.size;
        continue;
      }
    }
    out.push_back(p);
  }
  return out;
}

Spliced splicePayloads(std::string_view serialized, const std::vector<Bytes>& payloads, const GraphLead* lead) {
  Spliced out;
  Splicer splicer(payloads, out, lead && !lead->empty() ? lead : nullptr);
  out.size = splicer.message(serialized, Kind::Model);
  return out;
}

Spliced spliceGraphFields(std::string_view fields, const std::vector<Bytes>& payloads) {
  Spliced out;
  Splicer splicer(payloads, out, nullptr);
  out.size = splicer.message(fields, Kind::Graph);
  return out;
}

}  // namespace graphrw::wire
