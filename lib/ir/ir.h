// graphrw's IR: a Model owning a main Graph and a library of Functions; Graphs
// own Nodes (in order) and Values; Values know their producer and their uses.
// Everything ONNX carries that the IR does not model is kept in a "residual"
// protobuf message per object, so a load followed by a write is lossless.
// Edits go through ir::Rewriter (rewriter.h), which keeps use-lists right:
// every mutator below is private, reachable only from the IR's own code, the
// builder (builder.h), the Rewriter and the inliner. Passes get const views
// and non-const handles whose public members only read.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute_storage.h"
#include "ir/name.h"
#include "ir/symbols.h"
#include "ir/tensor.h"
#include "ir/value_info.h"
#include "support/buffer.h"
#include "support/fixed_pool.h"
#include "support/flat_map.h"
#include "support/name_table.h"
#include "support/owning_list.h"
#include "support/small_vector.h"

namespace graphrw::ir {

// ---------------------------------------------------------------------------
class Value;

struct Use {
  Node* node;
  int index;
  bool operator==(const Use& o) const { return node == o.node && index == o.index; }
};

// A node's inputs or outputs, a value's uses: one or two entries for nearly
// every node, held inline (support/small_vector.h) instead of in a heap block.
using ValueList = SmallVector<Value*, 2>;
using UseList = SmallVector<Use, 1>;

class Value final {
 public:
  Name name() const { return name_; }
  Graph* graph() const { return graph_; }
  Node* producer() const { return producer_; }
  int producerIndex() const { return producerIndex_; }
  const UseList& uses() const { return uses_; }
  bool isGraphInput() const { return graphInput_; }
  bool isInitializer() const { return initializerIndex_ != kNoInitializer; }
  const Tensor* initializer() const;  // its graph's entry (after class Graph)
  bool isSparseInitializer() const { return sparseInitializer_; }
  int graphOutputCount() const { return graphOutputs_; }
  // Defined without a producer node: a graph input, an initializer, or a
  // function's formal input.
  bool isSource() const { return producer_ == nullptr; }

  // The best type known: from value_info, the graph input/output, or the initializer.
  const onnx::TypeProto* type() const { return type_; }

  // From a pool of 72-byte blocks (support/fixed_pool.h): no allocator header each.
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size) noexcept;

 private:
  friend class Graph;
  GRAPHRW_IR_EDITORS;
  // The model's one copy of this type (Model::internType).
  void setType(onnx::TypeProto type);
  // 72 bytes (symbols.cpp checks): indexes, counts and flags take 32 bits
  // each; an initializer is found through its index in the graph's list (a
  // pointer in every value cost 8 MB a million values, most of them not weights).
  static constexpr uint32_t kNoInitializer = UINT32_MAX;
  static constexpr uint32_t kMaxGraphOutputs = (1u << 29) - 1;
  Name name_;
  Graph* graph_ = nullptr;
  Node* producer_ = nullptr;
  UseList uses_;
  const onnx::TypeProto* type_ = nullptr;  // owned by the model, shared by the values of one type
  int32_t producerIndex_ = -1;
  uint32_t graphOutputs_ : 29 = 0;  // Graph::addOutput refuses more than kMaxGraphOutputs
  uint32_t hasValueInfo_ : 1 = 0;  // in its graph's value_info: erasing scans only then
  uint32_t graphInput_ : 1 = 0;
  uint32_t sparseInitializer_ : 1 = 0;
  uint32_t slot_ = 0;  // index in Graph::values_
  uint32_t initializerIndex_ = kNoInitializer;  // index in Graph::initializers_
};

// ---------------------------------------------------------------------------
// Attribute: the AttributeProto minus its tensors and graphs, which are IR objects.
// The proto part is immutable and shared: nodes given one value (a replace's `set`,
// inlined copies, equal loaded attributes) hold one AttributeProto between them.
struct Attribute {
  // t, tensors, g and graphs cleared: they are the IR objects below.
  const onnx::AttributeProto& proto() const { return proto_ ? *proto_ : onnx::AttributeProto::default_instance(); }
  const Tensor* t() const { return objects_ ? objects_->t.get() : nullptr; }
  const std::vector<Tensor>& tensors() const;
  Graph* g() const { return objects_ ? objects_->g.get() : nullptr; }
  const std::vector<std::unique_ptr<Graph>>& graphs() const;

  const std::string& name() const { return proto().name(); }
  onnx::AttributeProto_AttributeType type() const { return proto().type(); }
  bool isRef() const { return proto().has_ref_attr_name(); }

 private:
  GRAPHRW_IR_EDITORS;
  friend class AttributeInterner;
  struct Objects {  // most attributes (ints, floats, strings) have none: 16 bytes per attribute, not 72
    std::unique_ptr<Tensor> t;
    std::vector<Tensor> tensors;
    std::unique_ptr<Graph> g;
    std::vector<std::unique_ptr<Graph>> graphs;
  };
  Objects& objects();  // created on first use
  onnx::AttributeProto& mutableProto();  // copy on write: copied first while shared
  void shareProto(const Attribute& other) { proto_ = other.proto_; }
  SharedAttributeProto proto_;  // never changed while shared
  std::unique_ptr<Objects> objects_;
};

// ---------------------------------------------------------------------------
class Node final {
 public:
  Name name() const { return name_; }
  const std::string& opType() const { return *op_->opType; }
  const std::string& domain() const { return *op_->domain; }
  const std::string& overload() const { return *op_->overload; }
  Graph* graph() const { return graph_; }

  const ValueList& inputs() const { return inputs_; }  // nullptr: missing optional
  const ValueList& outputs() const { return outputs_; }  // nullptr: missing optional
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }

  using AttributeList = InlineOneVector<Attribute>;  // one attribute in the node, more in a heap block
  const AttributeList& attributes() const { return attrs_; }
  const Attribute* attribute(std::string_view name) const;
  // The subgraphs held by this node's attributes (If/Loop/Scan bodies, Call callees).
  std::vector<Graph*> subgraphs() const;

  // Calls fn for each subgraph held by this node's attributes, without allocating.
  template <typename Fn>
  void forEachSubgraph(Fn&& fn) const {
    for (const auto& a : attrs_) {
      if (a.g()) fn(*a.g());
      for (const auto& g : a.graphs()) fn(*g);
    }
  }

  // What ONNX carries that the IR does not model (doc_string, metadata_props,
  // unknown fields); allocated only for nodes that have any.
  const onnx::NodeProto& residual() const { return residual_ ? *residual_ : onnx::NodeProto::default_instance(); }
  bool hasResidual() const { return residual_ != nullptr; }
  // Whether the input had name / op_type / domain set, even to "" (kept on write).
  enum Presence : uint8_t { kName = 1, kOpType = 2, kDomain = 4 };
  uint8_t presence() const { return static_cast<uint8_t>(presence_); }

  // From a pool of 128-byte blocks (support/fixed_pool.h): no allocator header each.
  static void* operator new(size_t size);
  static void operator delete(void* p, size_t size) noexcept;

 private:
  friend class Graph;
  GRAPHRW_IR_EDITORS;
  onnx::NodeProto& mutableResidual() {
    if (!residual_) residual_ = std::make_unique<onnx::NodeProto>();
    return *residual_;
  }
  void setPresence(uint8_t p) { presence_ = p; }
  Attribute* mutableAttribute(std::string_view name);
  Name name_;
  const OpSymbol* op_ = &internOp({}, {}, {});  // a graph has few distinct ones
  ValueList inputs_, outputs_;
  AttributeList attrs_;
  std::unique_ptr<onnx::NodeProto> residual_;
  uint32_t presence_ : 8 = 0;
  // The stamp of the Rewriter that created this node (0: none; see Rewriter::stamp_).
  uint32_t createdBy_ : 24 = 0;

 public:
  // Scratch space for graph algorithms (an order index, a visited mark); its
  // value means nothing between algorithms. Beside presence_: no padding.
  mutable uint32_t scratch = 0;

 private:
  Graph* graph_ = nullptr;
  // Its graph's node list (support/owning_list.h): this node owns the next.
  friend class ::graphrw::OwningList<Node>;  // this specialisation only: another could be defined by anyone
  std::unique_ptr<Node> next_;
  Node* prev_ = nullptr;
};

// ---------------------------------------------------------------------------
struct Initializer {
  Value* value;
  std::unique_ptr<Tensor> tensor;
};

struct SparseInitializer {
  Value* value;
  onnx::SparseTensorProto proto;
};

class Graph {
 public:
  // `names` is the scope's name table: one per model for the main graph and its
  // subgraphs, one per function.
  Graph(Model* model, NameTable* names, NameTable* nodeNames, Graph* parent, Node* parentNode)
      : model_(model), parent_(parent), parentNode_(parentNode), names_(names), nodeNames_(nodeNames) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Model* model() const { return model_; }
  Graph* parent() const { return parent_; }
  Node* parentNode() const { return parentNode_; }
  // The scope's value and node names: read here, changed by the Rewriter.
  const NameTable& names() const { return *names_; }
  const NameTable& nodeNames() const { return *nodeNames_; }

  using NodeList = OwningList<Node>;
  const NodeList& nodes() const { return nodes_; }
  size_t nodeCount() const { return nodes_.size(); }
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }
  const std::vector<ValueInfo>& valueInfo() const {
    if (!retired_.empty()) dropRetiredEntries();
    return valueInfo_;
  }
  const std::vector<Initializer>& initializers() const { return initializers_; }
  const std::vector<SparseInitializer>& sparseInitializers() const { return sparse_; }
  size_t valueCount() const { return values_.size(); }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }

  // This scope only / this scope and its ancestors.
  Value* findLocal(std::string_view name) const;
  Value* find(std::string_view name) const;

  const onnx::GraphProto& residual() const { return residual_ ? *residual_ : onnx::GraphProto::default_instance(); }
  // Where a node of this graph stands in nodes().
  NodeList::const_iterator position(const Node* node) const { return nodes_.at(node); }
  // The function whose body holds this graph (at any depth), or nullptr for
  // the main graph and its subgraphs: the one answer to "which scope is this".
  Function* owningFunction() const;

  // Every graph reachable from this one through node attributes, depth first, this one first.
  void walkGraphs(const std::function<void(Graph&)>& fn);
  void walkGraphs(const std::function<void(const Graph&)>& fn) const {
    const_cast<Graph*>(this)->walkGraphs([&](Graph& g) { fn(g); });
  }

 private:
  GRAPHRW_IR_EDITORS;
  friend class Function;
  // The model's one copy of it: 50,000 callees of one outlined body hold one.
  void setResidual(onnx::GraphProto&& residual);
  NameTable& mutableNames() const { return *names_; }
  NameTable& mutableNodeNames() const { return *nodeNames_; }
  // Building blocks used by the builder and the rewriter; passes use the Rewriter.
  Value* addValue(std::string_view name);  // registers the name; throws if taken in this scope
  // A value named `base`, or `base_N` when taken: unique in the scope's name table.
  Value* addFreshValue(std::string_view base);
  void reserve(size_t values);
  // Room for about this many more values and nodes (a pass that knows it will grow the graph).
  void reserveMore(size_t values, size_t nodes);
  void addInput(Value* v, onnx::ValueInfoProto info) { addInput(entry(v, std::move(info))); }
  void addOutput(Value* v, onnx::ValueInfoProto info) { addOutput(entry(v, std::move(info))); }
  void addValueInfo(Value* v, onnx::ValueInfoProto info) { addValueInfo(entry(v, std::move(info))); }
  // `like`'s type and other fields (an entry of any graph, of any model) for v.
  void addInput(Value* v, const ValueInfo& like) { addInput(entry(v, like)); }
  void addOutput(Value* v, const ValueInfo& like) { addOutput(entry(v, like)); }
  void addValueInfo(Value* v, const ValueInfo& like) { addValueInfo(entry(v, like)); }
  void addInput(ValueInfo e);
  void addOutput(ValueInfo e);
  void addValueInfo(ValueInfo e);
  // An entry for v of this graph's model: the type interned, the rest kept when not empty.
  ValueInfo entry(Value* v, onnx::ValueInfoProto&& info);
  ValueInfo entry(Value* v, const ValueInfo& like);
  const onnx::TypeProto* internType(onnx::TypeProto&& type);
  void addInitializer(Value* v, std::unique_ptr<Tensor> tensor);
  void addSparseInitializer(Value* v, onnx::SparseTensorProto proto);
  // The sparse initializer v becomes the dense initializer `tensor`.
  void makeDense(Value* v, std::unique_ptr<Tensor> tensor);
  Node* appendNode(std::unique_ptr<Node> node);
  Node* insertNode(NodeList::const_iterator before, std::unique_ptr<Node> node);
  void eraseValue(Value* v);  // must be unused and unproduced
  // Removes this graph's value_info entries for v; returns how many.
  size_t removeValueInfo(const Value* v);
  void removeInitializer(Value* v);
  void setOutputValue(size_t index, Value* v);

  // Low-level use-list edits.
  static void addUse(Value* v, Node* n, int index);
  static void removeUse(Value* v, Node* n, int index);

  Model* model_;
  Function* function_ = nullptr;  // set on a function's body
  Graph* parent_;
  Node* parentNode_;
  NameTable* names_;
  NameTable* nodeNames_;
  const onnx::GraphProto* residual_ = nullptr;  // name, doc_string, quantization_annotation, unknown fields
  NodeList nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  struct ValueName {
    std::string_view operator()(const Value* v) const { return v->name(); }
  };
  using ValueIndex = FlatIndex<Value, ValueName>;
  // The name index, built once the graph holds kIndexFrom values (or is
  // reserved for as many): a smaller graph (an outlined callee, a branch) is
  // scanned, where its index took 256 bytes a graph, 12 MB for 50,000 callees.
  static constexpr size_t kIndexFrom = 32;
  ValueIndex byName_;
  bool indexed_ = false;
  // A subgraph's value_info names a value of this graph: erasing it drops those entries too.
  bool declaredBelow_ = false;
  void buildIndex();
  void indexInsert(Value* v);  // no-ops while not indexed
  void indexErase(std::string_view name);
  bool admit(Value* v);  // whether a new value's name is free here (an indexed graph records it)
  Value* keep(std::unique_ptr<Value> value);  // appends an admitted value; the index is built at kIndexFrom
  std::vector<ValueInfo> inputs_, outputs_;
  // An erased value named by a value_info entry waits in retired_ (nameless)
  // until its entry goes with the others' in one sweep, at the next read of the
  // list (so a const read writes: a model is never shared between threads) or
  // when the retired reach 1/16 of it: erasing n such values is O(n), not n scans.
  mutable std::vector<ValueInfo> valueInfo_;
  mutable std::vector<std::unique_ptr<Value>> retired_;
  static constexpr uint32_t kRetired = UINT32_MAX;  // a retired value's slot_
  void dropRetiredEntries() const;
  std::vector<Initializer> initializers_;
  std::vector<SparseInitializer> sparse_;
};

inline const Tensor* Value::initializer() const {
  return initializerIndex_ == kNoInitializer ? nullptr : graph_->initializers()[initializerIndex_].tensor.get();
}

// ---------------------------------------------------------------------------
struct FunctionKey {
  std::string domain, name, overload;
  auto operator<=>(const FunctionKey&) const = default;
  std::string str() const;
};

class Function {
 public:
  explicit Function(Model* model);
  const FunctionKey& key() const { return key_; }
  Graph& body() { return *body_; }
  const Graph& body() const { return *body_; }
  // name, domain, attribute names, doc_string, opset_import, attribute_proto
  // (the attributes' defaults) and unknown fields. value_info lives in body().
  const onnx::FunctionProto& residual() const { return residual_; }
  // FunctionProto.attribute_proto: attributes with default values (ONNX >= 1.13).
  std::vector<onnx::AttributeProto> attributeDefaults() const;
  std::vector<std::string> attributeNames() const;  // all declared attributes, with or without default
  std::map<std::string, int64_t> opsetImports() const;

 private:
  GRAPHRW_IR_EDITORS;
  onnx::FunctionProto& mutableResidual() { return residual_; }
  FunctionKey key_;
  onnx::FunctionProto residual_;
  friend class Model;  // releaseNameTables
  mutable NameTable names_, nodeNames_;
  std::unique_ptr<Graph> body_;
};

// ---------------------------------------------------------------------------
class Model {
 public:
  Model();
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  Graph& graph() { return *graph_; }
  const Graph& graph() const { return *graph_; }
  // ir_version, producer, domain, model_version, doc_string, opset_import,
  // metadata_props, training_info (kept as is) and unknown fields.
  const onnx::ModelProto& residual() const { return residual_; }

  int64_t irVersion() const { return residual_.ir_version(); }
  std::map<std::string, int64_t> opsetImports() const;
  std::optional<int64_t> opsetVersion(const std::string& domain) const;

  const std::vector<std::unique_ptr<Function>>& functions() const { return functions_; }
  Function* findFunction(const FunctionKey& key) const;
  Function* findFunction(std::string_view domain, std::string_view name, std::string_view overload = {}) const;

  // Payloads referenced by the model share these (for external data).
  const std::shared_ptr<ExternalFiles>& externalFiles() const { return external_; }

  // The main graph's scope (its subgraphs included): read here, changed by the Rewriter.
  const NameTable& valueNames() const { return names_; }
  const NameTable& nodeNames() const { return nodeNames_; }
  const NameArena& nameText() const { return nameText_; }  // every node's and value's name (ir/name.h)
  // Lets the name tables of the model and its functions go (a million-node
  // graph's are about 20 MB); the next query rebuilds them from the IR.
  void releaseNameTables() const;

  // Calls fn on the main graph, every subgraph, and every function body (and their subgraphs).
  void walkGraphs(const std::function<void(Graph&)>& fn);
  void walkGraphs(const std::function<void(const Graph&)>& fn) const {
    const_cast<Model*>(this)->walkGraphs([&](Graph& g) { fn(g); });
  }

 private:
  GRAPHRW_IR_EDITORS;
  onnx::ModelProto& mutableResidual() { return residual_; }
  void setOpsetImport(const std::string& domain, int64_t version);
  Function* addFunction(std::unique_ptr<Function> fn);
  void removeFunction(const Function* fn);
  void setExternalFiles(std::shared_ptr<ExternalFiles> files) { external_ = std::move(files); }
  NameArena nameText_;  // every node's and value's name: first, so it goes last
  onnx::ModelProto residual_;
  mutable NameTable names_, nodeNames_;
  std::unique_ptr<Graph> graph_;
  std::vector<std::unique_ptr<Function>> functions_;
  std::map<FunctionKey, Function*> functionIndex_;
  std::map<std::string, int, std::less<>> functionNames_;  // fast reject for findFunction
  std::shared_ptr<ExternalFiles> external_;
  std::unique_ptr<AttributeInterner> attributes_;  // shared attribute protos (builder, rewriter, inliner)

  // Values' types and graphs' residuals, one copy of each distinct one (keyed
  // by its serialized bytes): a million-value graph has a few hundred types,
  // not a million 300-byte TypeProtos. Never shrinks while the model lives.
  friend class Value;
  friend class Graph;
  template <typename Proto>
  const Proto* intern(FlatStringMap<std::string, std::unique_ptr<const Proto>>& table, Proto&& proto);
  const onnx::TypeProto* internType(onnx::TypeProto&& type) { return intern(types_, std::move(type)); }
  FlatStringMap<std::string, std::unique_ptr<const onnx::TypeProto>> types_;
  FlatStringMap<std::string, std::unique_ptr<const onnx::GraphProto>> graphResiduals_;
  std::string internKey_;  // reused serialization buffer
};

// While one is alive on a thread, the memory of nodes freed on that thread is
// not reused: a node that outlived a stretch of work is never confused with a
// new node at its address (--verify-each compares nodes across a pass so).
struct FreedNodeHoldState;
class FreedNodeHold {
 public:
  FreedNodeHold();
  ~FreedNodeHold();
  FreedNodeHold(const FreedNodeHold&) = delete;
  FreedNodeHold& operator=(const FreedNodeHold&) = delete;

 private:
  std::unique_ptr<FreedNodeHoldState> state_;
};

// Shorthand for "domain::op" with the default domain shown as "ai.onnx".
std::string opName(const Node& node);
// The one way messages name a node: "node 'NAME' (DOMAIN::OP)".
std::string nodeLabel(const Node& node);
// ONNX's default domain is spelled "" or "ai.onnx": one predicate and its two spellings.
bool isDefaultDomain(std::string_view domain);
// The domain as a key (opset imports, schema look-ups): "" for the default one.
std::string domainKey(std::string_view domain);
// The domain as messages show it: "ai.onnx" for the default one.
std::string domainShown(std::string_view domain);
// The element size in bytes of an ONNX data type (0 for STRING / unknown).
size_t elementSize(int32_t dataType);
const char* dataTypeName(int32_t dataType);
// Why a tensor's data cannot be what its dims say (the element count of raw_data
// or of its typed field differs from the product of the dims, a negative dimension,
// a product past 2^63); nothing when they agree or the data is external.
std::optional<std::string> tensorDataProblem(const onnx::TensorProto& t);
std::string attributeTypeName(int type);
// The inverse of attributeTypeName ("FLOAT" -> FLOAT); nothing for an unknown name.
std::optional<onnx::AttributeProto_AttributeType> attributeTypeFromName(std::string_view name);

}  // namespace graphrw::ir

// The classes that may edit the IR, defined wherever the IR is: a class of one
// of their names defined elsewhere does not compile (a redefinition), so it
// cannot become a friend of the IR.
#include "ir/editors.h"  // IWYU pragma: export
