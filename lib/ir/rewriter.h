// The one way passes edit the IR. Every edit keeps use-lists and the name
// tables right and is counted, so "changed" is derived, never hand-set.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/pointer_set.h"

namespace graphrw::ir {

// What a pass changed, counted by the Rewriter. Each kind of edit is one
// member and one row of fields(): the pass manager's report, `changed` and
// --verify-each read the table, so a new kind of edit is added here and in
// docs/cli.md's list of report keys (a test checks the two agree).
struct ChangeCounts {
  size_t nodesAdded = 0;
  size_t nodesRemoved = 0;
  size_t nodesChanged =
      0;  // nodes that existed before and had inputs, outputs, attributes, op, name or place edited (each once)
  size_t valuesRenamed = 0;
  size_t initializersAdded = 0;
  size_t initializersRemoved = 0;
  size_t graphOutputsChanged = 0;
  size_t functionsAdded = 0;
  size_t functionsRemoved = 0;
  size_t opsetImportsChanged = 0;
  size_t valueInfoRemoved = 0;
  size_t irVersionChanged = 0;
  size_t typesDeclared = 0;
  size_t docStringsChanged = 0;

  struct Field {
    const char* key;  // the report's key
    size_t ChangeCounts::*count;  // the member
    bool summary;  // at the top of a pass's report entry (else under "edits")
  };
  static const std::vector<Field>& fields();
  bool any() const;
};

class Rewriter {
 public:
  explicit Rewriter(Model& model);
  Model& model() { return model_; }
  const ChangeCounts& counts() const { return counts_; }

  struct NodeSpec {
    std::string name;  // made unique in the scope's node-name table ("" stays "")
    std::string opType;
    std::string domain;
    std::vector<Value*> inputs;  // nullptr: missing optional
    std::vector<std::string> outputs;  // wanted names, made unique; "" = missing optional
  };
  // Inserts a node before `before` (nullptr: at the end of the graph).
  Node* createNode(Graph& g, const Node* before, NodeSpec spec);

  void setInput(Node* n, size_t index, Value* v);
  // Makes `n` the producer of `v` at output `index` (which must be empty);
  // v's previous producer loses it. Keeps v's name, type and value_info.
  void adoptOutput(Node* n, size_t index, Value* v);
  // Every node use of `from` (in any scope) reads `to` instead; graph outputs too when asked.
  void replaceAllUsesWith(Value* from, Value* to, bool graphOutputs = false);
  // Removes a node whose outputs are unused; its outputs are erased with it.
  void eraseNode(Node* n);
  // Renames a value to a fresh name built from `wanted`; returns the name given.
  std::string renameValue(Value* v, const std::string& wanted);
  std::string renameNode(Node* n, const std::string& wanted);
  // Doc strings (written, so a change): of a node, a graph, a function, the model; "" clears
  // the field. Setting what is there already is no edit.
  void setDocString(Node* n, const std::string& text);
  void setDocString(Graph& g, const std::string& text);
  void setDocString(const Function* f, const std::string& text);
  void setModelDocString(const std::string& text);
  // A node name unique in g's scope built from `base`, held from now on (a
  // prefix for the nodes a pass is about to create, e.g. an inlined call's).
  std::string reserveNodeName(Graph& g, const std::string& base);
  // Turns `n` into another op in place (attributes, inputs and outputs stay).
  void setOp(Node* n, const std::string& opType, const std::string& domain);
  // Replaces all of n's inputs.
  void setInputs(Node* n, const std::vector<Value*>& inputs);
  // Rearranges n's outputs: new output i is old output from[i] (>= 0), a fresh
  // value named fresh[i] (from[i] < 0, fresh[i] not empty) or missing. Old
  // outputs not kept must be unused; they are erased.
  void reshapeOutputs(Node* n, const std::vector<int>& from, const std::vector<std::string>& fresh);
  // Sets (adds or replaces) an attribute; tensors and subgraphs (a Call's
  // callee) become IR objects as the loader builds them.
  void setAttribute(Node* n, onnx::AttributeProto attribute);
  // Renames an attribute in place; returns whether the node had it.
  bool renameAttribute(Node* n, const std::string& from, const std::string& to);
  // Removes an attribute; returns whether it was there.
  bool removeAttribute(Node* n, const std::string& name);

  // ---- values, initializers, graph outputs ----
  // The type a value is known to have (an annotation for later analyses: it is
  // not written, so it is not a change).
  void setType(Value* v, onnx::TypeProto type);
  // Forgets the type known for v (an annotation; what is declared stays).
  void forgetType(Value* v);
  // Declares v's type in g, as written: on the graph input and output entries
  // naming v, else on its value_info entry (added when absent). v's known type
  // becomes it too.
  void declareType(Graph& g, Value* v, onnx::TypeProto type);
  // A new initializer of g named `name` (made unique in the scope), holding `tensor`.
  Value* addInitializer(Graph& g, const std::string& name, std::unique_ptr<Tensor> tensor);
  // The sparse initializer v becomes a dense one holding `tensor` (its name is v's).
  void makeDense(Value* v, std::unique_ptr<Tensor> tensor);
  // Removes an initializer nothing reads (no use, not a graph input or output).
  void eraseInitializer(Value* v);
  // The initializer v (dense, not a graph input) becomes the output of a new
  // Constant node, first in its graph, whose `value` is v's tensor, moved (its
  // bytes are not copied): v keeps its name, uses, value_info and known type.
  // A constant to a runtime that makes every initializer a variable (PopART in
  // training). Counted as one initializer removed and one node added.
  Node* initializerToConstant(Value* v);
  // Removes g's value_info entries for v; a value only those entries named
  // (nothing defines or reads it) goes with them. Returns how many entries went.
  size_t removeValueInfo(Graph& g, Value* v);
  // Graph output `index` of g becomes `v` (its value_info entry stays).
  void setGraphOutput(Graph& g, size_t index, Value* v);
  // Room for about this many more values and nodes in g.
  void reserve(Graph& g, size_t values, size_t nodes);
  // Room to count about this many existing nodes as changed (a pass about to
  // edit every node: the set does not double, old and new tables at once, as it fills).
  void expectChanges(size_t nodes) { changed_.reserve(nodes); }
  // Room for this many more value_info entries in g (declareType on every value).
  void expectDeclarations(Graph& g, size_t entries);

  // ---- functions and opset imports ----
  Function* addFunction(std::unique_ptr<Function> fn);
  void removeFunction(const Function* fn);
  // The import of `domain` in the scope holding g (the model, or the function
  // whose body g belongs to) becomes `version`; added when absent.
  void setOpsetImport(const Graph& g, const std::string& domain, int64_t version);
  // Removes the import of `domain` from the scope holding g (the model, or
  // the function whose body g belongs to); returns whether it was there.
  bool removeOpsetImport(const Graph& g, const std::string& domain);
  // The model's IR version becomes `version`.
  void setIrVersion(int64_t version);
  // Puts g's nodes in an order where every node comes after the producers of
  // what it (or its subgraphs) reads, keeping the present order where it can.
  // Returns whether anything moved. Throws Error(Internal) on a cycle.
  bool sortTopologically(Graph& g);

  // Whether an edit of n is counted: n was created, or changed, through this Rewriter.
  bool counted(const Node* n) const { return createdHere(n) || changed_.contains(n); }

 private:
  // A node edited: counted once, and not at all when this Rewriter created it.
  void markChanged(const Node* n);

  GRAPHRW_IR_TEST_FRIEND;
  bool createdHere(const Node* n) const;

  Model& model_;
  ChangeCounts counts_;
  // The nodes this Rewriter created carry its stamp (Node::createdBy_, 24 bits:
  // no set of a million created nodes). Stamps are handed out once each; after
  // 2^24 - 1 Rewriters in one process the rest keep the set instead.
  uint32_t stamp_;
  FlatPointerSet<Node> created_;  // only without a stamp
  FlatPointerSet<Node> changed_;
};

}  // namespace graphrw::ir
