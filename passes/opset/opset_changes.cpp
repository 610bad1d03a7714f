// The opset pass's knowledge of changes that need no rewrite (types added,
// attributes added whose value says "as before") and its check of a node's
// types against the schema it is converted to (opset_adapters.h).
#include <onnx/defs/data_type_utils.h>

#include <map>
#include <unordered_map>

#include "analysis/attributes.h"
#include "passes/opset/opset_adapters.h"

namespace graphrw::passes::opset {
namespace {

using namespace ir;
using AP = onnx::AttributeProto;

AP oldInt(const char* name, int64_t v) { return intAttribute(name, v); }
AP oldString(const char* name, const char* v) {
  AP a;
  a.set_name(name);
  a.set_type(AP::STRING);
  a.set_s(v);
  return a;
}
// Long: a table, ONNX's op changes version by version.
const std::map<std::pair<std::string, int64_t>, KnownChange>& changes() {
  static const auto table = [] {
    std::map<std::pair<std::string, int64_t>, KnownChange> t;
    auto types = [&](int64_t version, std::initializer_list<const char*> ops) {
      for (const char* op : ops) t[{op, version}] = KnownChange{};
    };
    // Types added (bfloat16 at 13, more integer types at 12 and 14,
    // sequences and optionals for Identity / If / Loop / Scan).
    types(12, {"Clip", "Max", "Min", "MaxPool", "ReduceMax", "ReduceMin"});
    types(13, {"Abs",
               "Add",
               "ArgMax",
               "ArgMin",
               "Cast",
               "Ceil",
               "Clip",
               "Concat",
               "Constant",
               "DepthToSpace",
               "Div",
               "Dropout",
               "Equal",
               "Erf",
               "Exp",
               "Expand",
               "Flatten",
               "Floor",
               "Gather",
               "GatherElements",
               "GatherND",
               "Gemm",
               "Greater",
               "Identity",
               "If",
               "IsNaN",
               "LRN",
               "Less",
               "Log",
               "Loop",
               "MatMul",
               "Max",
               "Mean",
               "MeanVarianceNormalization",
               "Min",
               "Mod",
               "Mul",
               "Neg",
               "NonZero",
               "Pad",
               "Pow",
               "Reciprocal",
               "ReduceL1",
               "ReduceL2",
               "ReduceLogSum",
               "ReduceLogSumExp",
               "ReduceMax",
               "ReduceMean",
               "ReduceMin",
               "ReduceProd",
               "ReduceSumSquare",
               "Relu",
               "Reshape",
               "ScatterElements",
               "ScatterND",
               "Shape",
               "Sigmoid",
               "Sign",
               "Size",
               "Slice",
               "SpaceToDepth",
               "Sqrt",
               "Sub",
               "Sum",
               "Tanh",
               "Tile",
               "Transpose",
               "SoftmaxCrossEntropyLoss",
               "NegativeLogLikelihoodLoss"});
    types(14, {"Add", "Sub", "Mul", "Div", "Relu", "CumSum", "Identity"});
    types(15, {"BatchNormalization", "Pow"});
    types(16, {"Identity", "If", "Loop", "Scan", "Where", "LessOrEqual", "GreaterOrEqual", "LeakyRelu", "PRelu"});
    // Attributes added whose value for the node says "as before".
    t[{"ArgMax", 12}] = {"select_last_index", oldInt("select_last_index", 0)};
    t[{"ArgMin", 12}] = {"select_last_index", oldInt("select_last_index", 0)};
    t[{"GatherND", 12}] = {"batch_dims", oldInt("batch_dims", 0)};
    for (const char* op : {"GRU", "LSTM", "RNN"}) t[{op, 14}] = {"layout", oldInt("layout", 0)};
    t[{"ScatterElements", 16}] = {"reduction", oldString("reduction", "none")};
    t[{"ScatterND", 16}] = {"reduction", oldString("reduction", "none")};
    t[{"RoiAlign", 16}] = {"coordinate_transformation_mode",
                           oldString("coordinate_transformation_mode", "output_half_pixel")};
    return t;
  }();
  return table;
}

}  // namespace

const KnownChange* knownChange(const std::string& op, int64_t version) {
  auto it = changes().find({op, version});
  return it == changes().end() ? nullptr : &it->second;
}

std::string applyKnownChange(Node* n, const KnownChange& change, const onnx::OpSchema& from, Rewriter& rw) {
  if (change.attribute.empty()) return "";
  const Attribute* a = n->attribute(change.attribute);
  AP effective;
  if (a) {
    effective = a->proto();
  } else {
    auto it = from.attributes().find(change.attribute);
    if (it != from.attributes().end()) effective = it->second.default_value;
  }
  effective.set_name(change.attribute);
  bool same =
      change.oldValue.type() == AP::INT ? effective.i() == change.oldValue.i() : effective.s() == change.oldValue.s();
  if (!same)
    return "attribute " + change.attribute + " is not " +
           (change.oldValue.type() == AP::INT ? std::to_string(change.oldValue.i()) : "'" + change.oldValue.s() + "'") +
           ": no form before opset " + std::to_string(from.SinceVersion());
  rw.removeAttribute(n, change.attribute);
  return "";
}

std::string checkTypes(const Node& n, const onnx::OpSchema& schema) {
  for (const auto& a : n.attributes())
    if (!schema.attributes().count(a.name()))
      return "attribute '" + a.name() + "' does not exist at opset " + std::to_string(schema.SinceVersion()) +
             "'s form";
  std::unordered_map<std::string, onnx::DataType> bound;
  auto check = [&](const std::vector<Value*>& values, const std::vector<onnx::OpSchema::FormalParameter>& formals,
                   const char* what) -> std::string {
    size_t present = 0;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i]) present = i + 1;
    if (formals.empty()) return present ? std::string("the op takes no ") + what + "s" : "";
    bool variadic = formals.back().GetOption() == onnx::OpSchema::Variadic;
    if (!variadic && present > formals.size())
      return "it has " + std::to_string(present) + " " + what + "s, the op takes at most " +
             std::to_string(formals.size());
    for (size_t i = 0; i < values.size(); ++i) {
      Value* v = values[i];
      if (!v || !v->type() || v->type()->value_case() == onnx::TypeProto::VALUE_NOT_SET) continue;
      if (v->type()->has_tensor_type() && v->type()->tensor_type().elem_type() == 0) continue;
      const auto& formal = formals[std::min(i, formals.size() - 1)];
      onnx::DataType type = onnx::Utils::DataTypeUtils::ToType(*v->type());
      if (!formal.GetTypes().count(type))
        return std::string(what) + " '" + v->name() + "' has type " + *type + ", which the op does not take";
      if (formal.GetIsHomogeneous() || i < formals.size()) {
        auto [it, fresh] = bound.emplace(formal.GetTypeStr(), type);
        if (!fresh && it->second != type && formal.GetTypeStr().find('(') == std::string::npos)
          return "type " + formal.GetTypeStr() + " would be both " + *it->second + " and " + *type;
      }
    }
    return "";
  };
  if (auto why = check(n.inputs(), schema.inputs(), "input"); !why.empty()) return why;
  return check(n.outputs(), schema.outputs(), "output");
}

}  // namespace graphrw::passes::opset
