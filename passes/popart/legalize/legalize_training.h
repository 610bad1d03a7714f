// legalize's training mode (legalize.cpp): what keeps a training export's
// parameters as they are, and steps on Dropout and shape ops (the Dropout one
// runs in both modes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <optional>
#include "ir/ir.h"

#include "ir/rewriter.h"
#include "pass/selector.h"

namespace graphrw::passes::legalize_detail {

// The main graph's initializers as the input had them: name -> type, shape,
// a hash of the bytes, and whether something read it. Those read only as a
// Dropout's ratio or training_mode are left out (no parameter: below opset 12
// they become an attribute).
class ParameterSnapshot {
 public:
  // Every initializer still an initializer (after constantBuffers).
  static ParameterSnapshot of(const ir::Model& model);
  // Stops (exit 70, a graphrw defect) naming the first parameter that is gone,
  // changed or no longer read; else the report entry: count and bytes kept.
  nlohmann::json check(const ir::Model& model) const;

 private:
  struct Entry {
    int32_t type = 0;
    std::vector<int64_t> dims;
    uint64_t bytes = 0;
    // The payload as a view of the input (kept alive here), or, for a tensor
    // held in the TensorProto's own fields, a hash of its bytes. A parameter
    // still holding the same view is unchanged without reading a byte of it.
    std::optional<Bytes> view;
    size_t hash = 0;
    bool read = false;
  };
  static Entry entryOf(const ir::Value& v);
  static bool sameValues(const Entry& was, const Entry& now);
  std::map<std::string, Entry> entries_;
};

// Dropouts that do nothing (ratio 0, or not in training mode; for an inference
// model, every one whose training_mode is not a graph input) with an unread
// mask are removed: their readers read the input. Returns how many.
size_t removeIdentityDropouts(ir::Rewriter& rw, ir::Model& model, bool inference);

// Reshape and Expand whose output has their input's static shape (what the
// LayerNormalization replacement applies to a scale of size C) are removed,
// so that the op reads the parameter itself. Returns how many.
size_t removeNoopShapeOps(ir::Rewriter& rw, ir::Model& model);

// The names a --parameters file lists: a JSON array of strings, or one name a
// line (blank lines and lines starting with '#' skipped), as
// `[n for n, _ in model.named_parameters()]` or print(n) writes them. Throws
// Error(Usage) naming the file (and line) when it cannot be read or parsed.
std::set<std::string> readParameterNames(const std::string& file);

// PopART makes every initializer of a training session a Variable
// (willow/src/ir.cpp:2329-2350), updated from its gradient, and stops the
// session build on one that is not floating point ("Currently only floating
// point variable tensors are updatable", ir.cpp:3080-3083). The main graph's
// read initializers that are no parameter become Constant nodes: every one that
// is not float (int64 position ids, masks), and, given `parameters` (what the
// framework trains), every float one it does not name (a sinusoidal encoding),
// but BatchNormalization's running mean and variance (inputs 3 and 4), which
// PopART updates by copy (op/batchnorm.cpp 88-96). A name in `parameters` that
// is no initializer of the main graph is an error naming it and `file`.
struct MadeConstant {
  std::vector<std::string> integer, floating;
  size_t count() const { return integer.size() + floating.size(); }
};
MadeConstant constantBuffers(ir::Rewriter& rw, ir::Model& model, const std::set<std::string>* parameters,
                             const std::string& file);

// The parameters `frozen` selects by name (not BatchNormalization's running
// statistics, no parameter) become Constant nodes: a fine-tuning session then
// trains the others only. A selector matching no parameter is an error naming
// it. Returns the names, in graph order.
std::vector<std::string> freezeParameters(ir::Rewriter& rw, ir::Model& model, const SelectorSet& frozen);

}  // namespace graphrw::passes::legalize_detail
