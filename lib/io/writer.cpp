#include "io/writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <span>

#include <google/protobuf/io/coded_stream.h>

#include "io/atomic_file.h"
#include "io/fault.h"
#include "io/file_copy.h"
#include "support/error.h"
#include "support/external_data.h"
#include "support/model_bytes.h"
#include "support/wire.h"

namespace fs = std::filesystem;

namespace graphrw {
namespace {

using namespace ir;

constexpr int kNodeOverload = 8;
constexpr int kFunctionValueInfo = 12;
constexpr int kFunctionOverload = 13;
constexpr uint64_t kProtobufLimit = INT32_MAX;

// Tensor data bound for an external data file.
struct DataFile {
  std::string location;
  std::vector<Bytes> chunks;  // payloads, with zero padding between them
  uint64_t size = 0;
  std::string padding = std::string(4096, '\0');

  // One tensor's data, given whole or as pieces (Tensor::rawPieces) written back to back.
  uint64_t append(std::span<const Bytes> pieces) {
    uint64_t bytes = 0;
    for (const Bytes& b : pieces) bytes += b.size;
    uint64_t align = bytes >= 65536 ? 4096 : 16;
    uint64_t pad = (align - size % align) % align;
    if (pad) {
      Bytes zeros;
      zeros.data = padding.data();
      zeros.size = pad;
      chunks.push_back(zeros);
      size += pad;
    }
    uint64_t offset = size;
    chunks.insert(chunks.end(), pieces.begin(), pieces.end());
    size += bytes;
    return offset;
  }
};

void setExternal(onnx::TensorProto& out, const std::string& location, uint64_t offset, uint64_t length) {
  google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> kept;
  for (const auto& e : out.external_data())
    if (e.key() != "location" && e.key() != "offset" && e.key() != "length" && e.key() != "checksum") *kept.Add() = e;
  out.clear_external_data();
  auto add = [&](const char* k, const std::string& v) {
    auto* e = out.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
  for (auto& e : kept) *out.add_external_data() = std::move(e);
  out.set_data_location(onnx::TensorProto::EXTERNAL);
  out.clear_raw_data();
}

// New fields join the unknown fields in field-number order, as protobuf would write them.
void addSorted(google::protobuf::UnknownFieldSet* unknown, std::vector<std::pair<int, std::string>> extra) {
  if (extra.empty()) return;
  for (auto& [number, bytes] : extra) unknown->AddLengthDelimited(number, bytes);
  wire::sortByNumber(*unknown);
}

class ProtoBuilder {
 public:
  // materialize: copy payloads into raw_data instead of leaving placeholders.
  ProtoBuilder(bool materialize, const WriteOptions& options, bool relocate, DataFile* data)
      : materialize_(materialize), options_(options), relocate_(relocate), data_(data) {}

  std::vector<Bytes> payloads;
  // When set, the main graph's nodes are serialized here one at a time (as GraphProto field 1), not all at once.
  ModelBytes* mainNodes = nullptr;

  void functionOnly(const Function& f, onnx::FunctionProto& out) { function(f, out); }
  void nodeOnly(const Node& n, onnx::NodeProto& out) { node(n, out); }

  // The main graph's value_info entries as GraphProto field 13, one at a time
  // into `bytes` (ModelBytes::finish), never all held as protobuf messages.
  void streamValueInfo(const Graph& g, ModelBytes& bytes) {
    onnx::ValueInfoProto vp;
    for (const auto& vi : g.valueInfo()) {
      valueInfo(vi, vp);
      streamField(bytes, 13, vp);
    }
  }

  void model(const Model& m, onnx::ModelProto& out) {
    out = m.residual();
    if (mainNodes) {
      onnx::NodeProto np;
      for (const auto& n : m.graph().nodes()) {
        np.Clear();
        node(*n, np);
        streamField(*mainNodes, 1, np);
      }
    }
    graph(m.graph(), *out.mutable_graph(), /*streamed=*/mainNodes != nullptr);
    for (const auto& f : m.functions()) function(*f, *out.add_functions());
  }

 private:
  // `m` as length-delimited GraphProto field `number` at the end of `bytes`;
  // what is held moves to the spill file past WriteOptions::spillNodesAt.
  void streamField(ModelBytes& bytes, uint32_t number, const google::protobuf::MessageLite& m) {
    namespace pbio = google::protobuf::io;
    const size_t size = m.ByteSizeLong();
    uint8_t* start = reinterpret_cast<uint8_t*>(bytes.extend(size + 11));
    uint8_t* p = pbio::CodedOutputStream::WriteTagToArray(number << 3 | 2, start);
    p = pbio::CodedOutputStream::WriteVarint64ToArray(size, p);
    p = m.SerializeWithCachedSizesToArray(p);
    bytes.commit(static_cast<size_t>(p - start));
    if (options_.spillNodesAt > 0 && bytes.appended() >= options_.spillNodesAt) bytes.spillNodes(payloads);
  }

  void inlineBytes(std::span<const Bytes> pieces, onnx::TensorProto& out) {
    if (materialize_) {
      std::string* raw = out.mutable_raw_data();
      raw->clear();
      for (const Bytes& b : pieces) raw->append(b.data, b.size);
      return;
    }
    // Placeholder, spliced back as raw_data by the writer.
    out.mutable_unknown_fields()->AddVarint(wire::kPayloadField, payloads.size());
    if (pieces.size() != 1) out.mutable_unknown_fields()->AddVarint(wire::kPayloadCountField, pieces.size());
    payloads.insert(payloads.end(), pieces.begin(), pieces.end());
  }

  bool movable(const Tensor& t, uint64_t size) const {
    return options_.external == ExternalMode::Move && data_ && size >= options_.threshold &&
           t.dataType() != onnx::TensorProto::STRING;
  }

  void tensor(const Tensor& t, onnx::TensorProto& out, std::string_view name) {
    out = t.proto();
    if (out.name() != name && !(name.empty() && !out.has_name())) out.set_name(std::string(name));
    if (t.isExternal()) {
      if (materialize_) return;
      bool keep = options_.external == ExternalMode::Keep && !relocate_;
      if (keep) return;
      Bytes bytes = t.externalBytes();
      if (options_.external == ExternalMode::Embed ||
          (options_.external == ExternalMode::Move && !movable(t, bytes.size))) {
        out.clear_external_data();
        out.clear_data_location();
        inlineBytes({&bytes, 1}, out);
      } else {
        uint64_t offset = data_->append({&bytes, 1});
        setExternal(out, data_->location, offset, bytes.size);
      }
      return;
    }
    std::optional<Bytes> raw = t.rawView();
    if (!raw && out.has_raw_data() && movable(t, out.raw_data().size())) raw = Bytes::copyOf(out.raw_data());
    std::span<const Bytes> pieces = raw ? std::span<const Bytes>(&*raw, 1) : std::span<const Bytes>(t.rawPieces());
    if (pieces.empty()) return;
    uint64_t size = raw ? raw->size : t.storedBytes();
    if (movable(t, size)) {
      uint64_t offset = data_->append(pieces);
      setExternal(out, data_->location, offset, size);
    } else {
      inlineBytes(pieces, out);
    }
  }

  void attribute(const Attribute& a, onnx::AttributeProto& out) {
    out = a.proto();
    if (a.t()) tensor(*a.t(), *out.mutable_t(), a.t()->proto().name());
    for (const auto& t : a.tensors()) tensor(t, *out.add_tensors(), t.proto().name());
    if (a.g()) graph(*a.g(), *out.mutable_g());
    for (const auto& g : a.graphs()) graph(*g, *out.add_graphs());
  }

  void node(const Node& n, onnx::NodeProto& out) {
    if (n.hasResidual()) out = n.residual();
    uint8_t p = n.presence();
    if (!n.name().empty() || (p & Node::kName)) out.set_name(n.name().str());
    if (!n.opType().empty() || (p & Node::kOpType)) out.set_op_type(n.opType());
    if (!n.domain().empty() || (p & Node::kDomain)) out.set_domain(n.domain());
    for (const Value* v : n.inputs()) out.add_input(v ? v->name().str() : std::string());
    for (const Value* v : n.outputs()) out.add_output(v ? v->name().str() : std::string());
    for (const auto& a : n.attributes()) attribute(a, *out.add_attribute());
    if (!n.overload().empty()) addSorted(out.mutable_unknown_fields(), {{kNodeOverload, n.overload()}});
  }

  static void valueInfo(const ValueInfo& vi, onnx::ValueInfoProto& out) {
    if (vi.rest())
      out = *vi.rest();
    else
      out.Clear();
    out.set_name(vi.value->name().str());
    if (vi.type()) *out.mutable_type() = *vi.type();
  }

  // `streamed`: the main graph of a streamed model, whose nodes and
  // value_info the ModelBytes receives on their own.
  void graph(const Graph& g, onnx::GraphProto& out, bool streamed = false) {
    out = g.residual();
    if (!streamed) {
      out.mutable_node()->Reserve(static_cast<int>(g.nodeCount()));
      for (const auto& n : g.nodes()) node(*n, *out.add_node());
    }
    for (const auto& init : g.initializers()) tensor(*init.tensor, *out.add_initializer(), init.value->name());
    for (const auto& sp : g.sparseInitializers()) {
      auto* s = out.add_sparse_initializer();
      *s = sp.proto;
      if (s->values().name() != sp.value->name()) s->mutable_values()->set_name(sp.value->name().str());
    }
    for (const auto& vi : g.inputs()) valueInfo(vi, *out.add_input());
    for (const auto& vi : g.outputs()) valueInfo(vi, *out.add_output());
    if (!streamed)
      for (const auto& vi : g.valueInfo()) valueInfo(vi, *out.add_value_info());
  }

  void function(const Function& f, onnx::FunctionProto& out) {
    out = f.residual();
    const auto& key = f.key();
    if (!key.name.empty() || f.residual().has_name()) out.set_name(key.name);
    if (!key.domain.empty() || f.residual().has_domain()) out.set_domain(key.domain);
    const Graph& body = f.body();
    for (const auto& vi : body.inputs()) out.add_input(vi.value->name().str());
    for (const auto& vi : body.outputs()) out.add_output(vi.value->name().str());
    for (const auto& n : body.nodes()) node(*n, *out.add_node());
    std::vector<std::pair<int, std::string>> extra;
    for (const auto& vi : body.valueInfo()) {
      onnx::ValueInfoProto p;
      valueInfo(vi, p);
      extra.emplace_back(kFunctionValueInfo, p.SerializeAsString());
    }
    if (!key.overload.empty()) extra.emplace_back(kFunctionOverload, key.overload);
    addSorted(out.mutable_unknown_fields(), std::move(extra));
  }

  bool materialize_;
  const WriteOptions& options_;
  bool relocate_;
  DataFile* data_;
};

bool hasExternalTensors(const Model& m) {
  bool found = false;
  const_cast<Model&>(m).walkGraphs([&](Graph& g) {
    for (const auto& i : g.initializers()) found |= i.tensor->isExternal();
    for (const auto& n : g.nodes())
      for (const auto& a : n->attributes()) {
        if (a.t()) found |= a.t()->isExternal();
        for (const auto& t : a.tensors()) found |= t.isExternal();
      }
  });
  return found;
}

std::set<fs::path> externalSources(const Model& m) {
  std::set<fs::path> files;
  auto add = [&](const Tensor& t) {
    if (!t.isExternal() || !t.externalFiles()) return;
    std::error_code ec;
    files.insert(fs::weakly_canonical(t.externalFiles()->baseDir() / parseExternalRef(t.proto()).location, ec));
  };
  const_cast<Model&>(m).walkGraphs([&](Graph& g) {
    for (const auto& i : g.initializers()) add(*i.tensor);
    for (const auto& n : g.nodes())
      for (const auto& a : n->attributes()) {
        if (a.t()) add(*a.t());
        for (const auto& t : a.tensors()) add(t);
      }
  });
  return files;
}

bool sameDir(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  bool same = fs::equivalent(a.empty() ? "." : a, b.empty() ? "." : b, ec);
  return !ec && same;
}

// Room for the model's fields before its graph (1-6, the residual's): their
// text and up to 11 bytes per tag and varint, the graph's tag and length too.
size_t headroomFor(const Model& model) {
  const onnx::ModelProto& r = model.residual();
  return r.producer_name().size() + r.producer_version().size() + r.domain().size() + r.doc_string().size() + 7 * 11;
}

[[noreturn]] void overProtobufLimit(const std::string& size) {  // size: "N bytes, " when known
  usageError("the model would be " + size +
             "over protobuf's 2 GB limit; store the weights outside it with --external-data FILE");
}

}  // namespace

// The model's protobuf bytes, payloads as placeholders, with the main graph's
// nodes streamed: ModelProto.graph (7) gets them as its leading field 1, the
// place protobuf itself gives them.
std::unique_ptr<ModelBytes> serializeStreamed(ProtoBuilder& builder, const Model& model) {
  auto bytes = std::make_unique<ModelBytes>(headroomFor(model));
  builder.mainNodes = bytes.get();
  try {
    onnx::ModelProto proto;
    builder.model(model, proto);
    bytes->finish(proto.SerializeAsString(), [&](ModelBytes& b) { builder.streamValueInfo(model.graph(), b); });
  } catch (const std::length_error&) {
    overProtobufLimit("");
  }
  return bytes;
}

// One message built with every payload copied in.
template <typename Proto, typename Build>
Proto materialized(Build build) {
  WriteOptions options;
  ProtoBuilder builder(true, options, false, nullptr);
  Proto proto;
  build(builder, proto);
  return proto;
}

onnx::ModelProto toProto(const Model& model) {
  return materialized<onnx::ModelProto>([&](ProtoBuilder& b, onnx::ModelProto& p) { b.model(model, p); });
}

void buildProtoWithoutPayloads(const Model& model, onnx::ModelProto& out) {
  WriteOptions options;
  ProtoBuilder builder(false, options, false, nullptr);
  builder.model(model, out);
}

onnx::FunctionProto functionToProto(const Function& function) {
  return materialized<onnx::FunctionProto>(
      [&](ProtoBuilder& b, onnx::FunctionProto& p) { b.functionOnly(function, p); });
}

onnx::NodeProto nodeToProto(const Node& node) {
  return materialized<onnx::NodeProto>([&](ProtoBuilder& b, onnx::NodeProto& p) { b.nodeOnly(node, p); });
}

std::string serialize(const Model& model) {
  WriteOptions options;
  ProtoBuilder builder(false, options, false, nullptr);
  auto bytes = serializeStreamed(builder, model);
  auto spliced = wire::splicePayloads(bytes->view(), builder.payloads, &bytes->lead());
  std::string out;
  out.reserve(spliced.size);
  for (const auto& p : spliced.pieces) out.append(p.data, p.size);
  return out;
}

namespace {

// Protobuf (and so graphrw's loader, ONNX and ONNX Runtime) reads messages
// nested at most 100 deep; each level of subgraph costs 3 (node, attribute,
// graph) and a graph's value types a few more. A model nested deeper than
// this would be written but could not be read back.
constexpr size_t kMaxSubgraphDepth = 30;

void checkNesting(const Model& model) {
  std::function<void(const Graph&, size_t)> walk = [&](const Graph& g, size_t depth) {
    for (const auto& n : g.nodes())
      n->forEachSubgraph([&](const Graph& sub) {
        if (depth + 1 > kMaxSubgraphDepth)
          fail(ExitCode::Unsupported,
               "node '" + n->name() + "' (" + opName(*n) + ") holds subgraphs nested more than " +
                   std::to_string(kMaxSubgraphDepth) +
                   " deep: the model could not be read back (protobuf reads 100 message levels)");
        walk(sub, depth + 1);
      });
  };
  walk(model.graph(), 0);
  for (const auto& f : model.functions()) walk(f->body(), 0);
}

}  // namespace

WriteResult writeModel(Model& model, const std::string& path, const WriteOptions& options) {
  checkNesting(model);
  const bool toStdout = path == "-";
  fs::path outDir = toStdout ? fs::current_path() : fs::path(path).parent_path();
  if (outDir.empty()) outDir = ".";

  // Where external data goes.
  bool relocate = false;
  DataFile data;
  bool useData = false;
  if (options.external == ExternalMode::Move) {
    if (options.externalFile.empty()) usageError("--external-data needs a file name");
    useData = true;
    data.location = options.externalFile;
  } else if (options.external == ExternalMode::Keep && hasExternalTensors(model)) {
    const auto& ext = model.externalFiles();
    if (!ext || !sameDir(ext->baseDir(), outDir)) {
      if (toStdout)
        usageError(
            "the model has external data that would not be found beside standard output; "
            "use --embed-external-data, or write to a file with -o");
      relocate = true;
      useData = true;
      data.location = fs::path(path).filename().string() + ".data";
    }
  }
  if (useData) {
    // The location is ours to choose, but must obey the rules we enforce on input.
    ExternalFiles(outDir).resolve(data.location);
    std::error_code ec;
    fs::path target = fs::weakly_canonical(outDir / data.location, ec);
    if (externalSources(model).count(target))
      usageError("external data file '" + data.location + "' is read by the input model; choose another name");
    auto same = [&](const fs::path& other) {
      std::error_code e1;
      return fs::weakly_canonical(other, e1) == target;
    };
    if (!toStdout && same(path))
      usageError("external data file '" + data.location + "' would be the output model itself; choose another name");
    for (const auto& input : options.protect)
      if (same(input))
        usageError("external data file '" + data.location + "' would replace the input " + input.string() +
                   "; choose another name");
  }

  ProtoBuilder builder(false, options, relocate, useData ? &data : nullptr);
  auto bytes = serializeStreamed(builder, model);
  auto spliced = wire::splicePayloads(bytes->view(), builder.payloads, &bytes->lead());
  if (spliced.size > kProtobufLimit) overProtobufLimit(std::to_string(spliced.size) + " bytes, ");

  WriteResult result;
  result.modelBytes = spliced.size;
  std::unique_ptr<AtomicFile> dataOut;
  if (useData && !data.chunks.empty()) {
    dataOut = std::make_unique<AtomicFile>(outDir / data.location);
    std::vector<wire::Piece> pieces;
    pieces.reserve(data.chunks.size());
    for (const auto& c : data.chunks) pieces.push_back(wire::payloadPiece(c));
    writePieces(dataOut->fd(), pieces, dataOut->target().string());
    result.externalBytes = data.size;
    result.dataFiles.push_back((outDir / data.location).string());
  }
  // The data file is committed first, keeping the file it replaces until the
  // model is in place: a failure leaves both as they were.
  if (toStdout) {
    if (dataOut) dataOut->commit(/*keepBackup=*/true);
    writePieces(STDOUT_FILENO, spliced.pieces, "<stdout>");
  } else {
    AtomicFile out(path);
    writePieces(out.fd(), spliced.pieces, path);
    if (dataOut) dataOut->commit(/*keepBackup=*/true);
    out.commit();
  }
  if (dataOut) dataOut->release();
  return result;
}

}  // namespace graphrw
