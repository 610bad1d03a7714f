// The IR's forward declarations, the list of classes allowed to edit it, and
// Tensor (an initializer's or attribute's data): the part of ir.h that
// neither nodes nor graphs need to know about.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/buffer.h"

namespace graphrw::ir {

class Graph;
class Node;
class Model;
class Function;
class ExternalFiles;
class Builder;
class Rewriter;
class InlineCopier;
class IrAccess;
class AttributeInterner;  // attribute_interner.h

// The classes allowed to edit the IR. Test targets (and only they: CMake
// defines GRAPHRW_IR_TESTING for them, tests/arch/check_tree.py refuses it
// anywhere else) add tests/ir_corruptor.h's Corruptor, which builds broken IR
// on purpose; in every other target a class of that name has no access. The
// friend declaration changes no layout or code, only what compiles.
#ifdef GRAPHRW_IR_TESTING
namespace testing {
struct Corruptor;
}
#define GRAPHRW_IR_TEST_FRIEND friend struct ::graphrw::ir::testing::Corruptor
#else
#define GRAPHRW_IR_TEST_FRIEND static_assert(true)
#endif
#define GRAPHRW_IR_EDITORS                  \
  friend class ::graphrw::ir::IrAccess;     \
  friend class ::graphrw::ir::Builder;      \
  friend class ::graphrw::ir::Rewriter;     \
  friend class ::graphrw::ir::InlineCopier; \
  GRAPHRW_IR_TEST_FRIEND

// ---------------------------------------------------------------------------
// Tensor: the metadata as ONNX keeps it (dims, data type, name, typed fields,
// external_data) plus the raw bytes as a view never copied between loader and writer.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(onnx::TensorProto proto) : proto_(std::move(proto)) {}
  // Raw bytes as a view (the proto holds no data).
  Tensor(onnx::TensorProto meta, Bytes raw) : proto_(std::move(meta)), raw_(std::move(raw)) {}
  // Raw bytes as views of other tensors' bytes, concatenated in order (a
  // folded Concat of weights): nothing is read or copied until written.
  Tensor(onnx::TensorProto meta, std::shared_ptr<const std::vector<Bytes>> pieces)
      : proto_(std::move(meta)), pieces_(std::move(pieces)) {}

  const std::string& name() const { return proto_.name(); }
  int32_t dataType() const { return proto_.data_type(); }
  std::vector<int64_t> dims() const { return {proto_.dims().begin(), proto_.dims().end()}; }
  int64_t elementCount() const;
  bool isExternal() const { return proto_.data_location() == onnx::TensorProto::EXTERNAL; }

  // The metadata. Its raw_data is empty when the payload is a view.
  const onnx::TensorProto& proto() const { return proto_; }

  // Raw bytes held as a view (large raw_data, or external data once loaded).
  const std::optional<Bytes>& rawView() const { return raw_; }
  // Raw bytes held as several views whose concatenation is the data (see the
  // constructor); empty for every other tensor.
  const std::vector<Bytes>& rawPieces() const;
  // The raw bytes of a view or of pieces, whole, read without touching a
  // mapping (Bytes::copy); nothing for data held otherwise.
  std::optional<std::string> rawCopy() const;

  // The external file this tensor's data lives in, when isExternal().
  const std::shared_ptr<ExternalFiles>& externalFiles() const { return external_; }
  // Reads (maps) external data on first use. Throws Error(BadInput).
  Bytes externalBytes() const;
  // Size in bytes of the tensor's data as stored (raw, typed or external).
  uint64_t storedBytes() const;

 private:
  // A tensor the IR holds is edited by the Rewriter only (a new tensor is
  // built whole from its TensorProto and handed to Rewriter::addInitializer).
  GRAPHRW_IR_EDITORS;
  onnx::TensorProto& mutableProto() { return proto_; }
  void setRawView(Bytes bytes) {
    raw_ = std::move(bytes);
    pieces_.reset();
  }
  void clearRawView() {
    raw_.reset();
    pieces_.reset();
  }
  void setExternalFiles(std::shared_ptr<ExternalFiles> files) { external_ = std::move(files); }
  onnx::TensorProto proto_;
  std::optional<Bytes> raw_;
  std::shared_ptr<const std::vector<Bytes>> pieces_;  // shared: copying a tensor copies no list
  std::shared_ptr<ExternalFiles> external_;
};

}  // namespace graphrw::ir

// Whoever sees the IR's classes sees their editors too (ir/editors.h, through ir.h).
#include "ir/ir.h"  // IWYU pragma: export
