// Protobuf wire-format walking for ONNX models.
//
// protobuf's generated parser always copies `bytes` fields, so
// graphrw parses a model in two steps: stripPayloads() walks the file's bytes
// and replaces every large TensorProto.raw_data by a small placeholder field
// that records a view into the file; protobuf then parses the (small) rest.
// The writer does the reverse: protobuf serializes the model with placeholders,
// and splicePayloads() puts each payload back in protobuf's own field order,
// fixing the length of every enclosing message, without copying payloads.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/unknown_field_set.h>

#include "support/buffer.h"

namespace graphrw::wire {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, Len = 2, StartGroup = 3, EndGroup = 4, Fixed32 = 5 };

// The unknown field that stands in for a payload while the model is a protobuf
// message: a varint index into the payload table. No ONNX field uses it.
constexpr uint32_t kPayloadField = 536870000;
// With it, a varint count: the payload is that many consecutive entries of the
// table, from the index on, concatenated (a tensor held as pieces).
constexpr uint32_t kPayloadCountField = 536870001;

struct Field {
  uint32_t number = 0;
  WireType type = WireType::Varint;
  const char* begin = nullptr;  // first byte of the tag
  const char* end = nullptr;  // one past the value
  uint64_t varint = 0;  // the value, for Varint
  std::string_view payload;  // the value, for Len (and the raw bytes of fixed-width values)
};

// Reads the fields of one message in order. Throws std::runtime_error on bytes
// that are not a protobuf message (truncated, bad varint, bad wire type).
class Reader {
 public:
  explicit Reader(std::string_view bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool next(Field& field);
  size_t offset(const char* base) const { return static_cast<size_t>(p_ - base); }

 private:
  uint64_t readVarint();
  const char* p_;
  const char* end_;
};

void appendVarint(std::string& out, uint64_t value);
void appendTag(std::string& out, uint32_t number, WireType type);

// Helpers for unknown fields. Fields newer than ONNX 1.12 (NodeProto.overload,
// FunctionProto.attribute_proto, value_info, ...) arrive there.
std::vector<std::string> lenFields(const google::protobuf::UnknownFieldSet& fields, int number);
std::optional<uint64_t> lastVarint(const google::protobuf::UnknownFieldSet& fields, int number);
bool hasField(const google::protobuf::UnknownFieldSet& fields, int number);
// Stably sorts by field number: the order protobuf writes known fields in.
void sortByNumber(google::protobuf::UnknownFieldSet& fields);
void appendLenField(std::string& out, uint32_t number, std::string_view value);

// Loader side.

// One repeated field of the main graph (its nodes, its value_info entries) as
// stripPayloads(splitMain) took it out of the model: each element's bytes
// (placeholders included), handed out in order by next(). An element with no
// payload (almost every node, every value_info entry) is read from the source
// where it lies, found again by walking the graph's fields, so the stream
// costs no memory per element; the few nodes that held payloads are stripped
// copies. As the stream moves on, the source's pages behind it are let go.
class MainFields {
 public:
  explicit MainFields(uint32_t number) : number_(number) {}
  size_t size() const { return count_; }
  // The next element's bytes, valid until the source is released; throws
  // std::out_of_range past the end.
  std::string_view next();
  // Lets the source's pages up to the end of the last element handed out go.
  void release() const;

  // For the stripper: a ModelProto.graph occurrence begins (its bytes, a view
  // of the source), and one of its elements (where its field begins, in those
  // bytes), with its stripped copy when it held payloads.
  void beginGraph(std::shared_ptr<const Buffer> source, std::string_view graph);
  void add(const char* field, std::optional<std::string> copy);

 private:
  uint32_t number_;  // the GraphProto field
  std::shared_ptr<const Buffer> source_;
  std::vector<std::string_view> graphs_;  // each occurrence of ModelProto.graph, from its first element on
  bool seen_ = false;  // an element of the last occurrence was added
  std::deque<std::string> copies_;  // the elements that held payloads, stripped
  std::vector<size_t> copyAt_;  // and their indices
  size_t count_ = 0;
  // The cursor of next().
  size_t graph_ = 0, index_ = 0, copy_ = 0;
  std::optional<Reader> reader_;
  const char* done_ = nullptr;  // one past the last element handed out, in the source
};

struct Stripped {
  std::string bytes;  // the model with large raw_data replaced by placeholders
  std::vector<Bytes> payloads;  // views into the source buffer, by placeholder index
  // With splitMain: the main graph's nodes and value_info entries, taken out
  // of `bytes`. The loader parses them one at a time instead of all at once
  // (a typed million-node graph's entries parsed whole took 400 MB).
  MainFields mainNodes{1}, mainValueInfo{13};
};
// Throws std::runtime_error with a message saying what is malformed.
Stripped stripPayloads(const std::shared_ptr<const Buffer>& source, size_t threshold, bool splitMain = false);

// Writer side.
struct Piece {
  const char* data;
  size_t size;
  const Buffer* file = nullptr;  // when set, the bytes are also at `offset` in file->fd()
  uint64_t offset = 0;
};
// A payload as a piece: file-backed when its owner is a mapped file.
Piece payloadPiece(const Bytes& bytes);
class Spliced {
 public:
  std::vector<Piece> pieces;
  uint64_t size = 0;
  std::deque<std::string> headers;  // owns the re-encoded tags and lengths the pieces point at
};
// Merges file-backed pieces with their neighbours where the output is the
// input's own bytes: a memory piece equal to the bytes right after (or right
// before) a file piece in that file, and file pieces that are contiguous in it.
// An unchanged model then copies as one range, in the kernel. Memory pieces
// over `maxCompare` bytes are never compared.
std::vector<Piece> coalesce(const std::vector<Piece>& pieces, size_t maxCompare = 16u << 20);
// Bytes that belong at the very start of the main graph (ModelProto field 7),
// ahead of what `serialized` holds there: main-graph nodes already spliced and
// moved out of memory (ModelBytes::spillNodes).
struct GraphLead {
  std::vector<Piece> pieces;
  uint64_t size = 0;
  bool empty() const { return pieces.empty(); }
};
// `serialized` must outlive the result; so must the payloads' owners and the
// lead's pieces.
Spliced splicePayloads(std::string_view serialized, const std::vector<Bytes>& payloads,
                       const GraphLead* lead = nullptr);
// The same for a run of GraphProto fields on their own (a batch of nodes).
Spliced spliceGraphFields(std::string_view fields, const std::vector<Bytes>& payloads);

}  // namespace graphrw::wire
