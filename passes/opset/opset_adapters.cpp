#include "passes/opset/opset_adapters.h"

#include <onnx/defs/data_type_utils.h>

#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "analysis/attributes.h"

namespace graphrw::passes::opset {
namespace {

using namespace ir;
using TP = onnx::TensorProto;
using AP = onnx::AttributeProto;

// What makes a shape static before a conversion: in an export, the shapes an
// adapter needs are computed from the inputs' (Shape, Gather, ConstantOfShape
// ...), so fixing the inputs alone is not enough: the computation must fold.
const std::string kMakeStatic =
    "(fix the input shapes and fold what is computed from them: `graphrw legalize` does both, or `graphrw "
    "set-shapes` then `graphrw fold`)";

AP intsAttr(const std::string& name, const std::vector<int64_t>& v) {
  AP a;
  a.set_name(name);
  a.set_type(AP::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}
AP floatAttr(const std::string& name, float v) {
  AP a;
  a.set_name(name);
  a.set_type(AP::FLOAT);
  a.set_f(v);
  return a;
}

const onnx::TensorShapeProto* shapeOf(const Value* v) {
  if (!v || !v->type() || !v->type()->has_tensor_type() || !v->type()->tensor_type().has_shape()) return nullptr;
  return &v->type()->tensor_type().shape();
}
int64_t rankOf(const Value* v) {
  const auto* s = shapeOf(v);
  return s ? s->dim_size() : -1;
}
int32_t elemTypeOf(const Value* v) {
  if (!v || !v->type() || !v->type()->has_tensor_type()) return 0;
  return v->type()->tensor_type().elem_type();
}

// Values made by WeightFolder::constant: inside a function body they come from
// a Constant node, which continues the conversion with the others.
void addProducer(std::vector<Node*>& nodes, Value* v) {
  if (v && v->producer()) nodes.push_back(v->producer());
}

Value* intsConstant(StepContext& c, Node* n, const std::vector<int64_t>& values, const std::string& suffix) {
  HostTensor t{TP::INT64, {static_cast<int64_t>(values.size())}, {}};
  t.data.resize(values.size() * 8);
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), values.size() * 8);
  return c.weights.constant(*n->graph(), n, t, (n->name().empty() ? n->opType() : n->name().str()) + suffix);
}

// The constant integers at input `i` of n: nullopt when the input is absent, a refusal when not constant.
std::optional<std::vector<int64_t>> constInts(StepContext& c, Node* n, size_t i, std::string& why) {
  Value* v = n->input(i);
  if (!v) return std::nullopt;
  const HostTensor* t = c.weights.constantValue(v);
  if (!t) {
    why = "input '" + v->name() + "' is not a constant (fold the model first)";
    return std::nullopt;
  }
  return t->asInts();
}

// A new node before `before`, reading `inputs`, with fresh outputs named after `name`.
Node* add(StepContext& c, Node* before, const std::string& name, const std::string& op, std::vector<Value*> inputs,
          size_t outputs, std::vector<AP> attrs = {}) {
  std::vector<std::string> outs;
  for (size_t i = 0; i < outputs; ++i) outs.push_back(name + (outputs > 1 ? "_" + std::to_string(i) : ""));
  Node* m = c.rw.createNode(*before->graph(), before, {name, op, "", std::move(inputs), std::move(outs)});
  for (auto& a : attrs) c.rw.setAttribute(m, std::move(a));
  return m;
}

// `last` (made with missing outputs) takes over n's outputs; n goes.
void takeOver(StepContext& c, Node* n, Node* last) {
  for (size_t i = 0; i < n->outputs().size(); ++i)
    if (Value* v = n->output(i)) c.rw.adoptOutput(last, i, v);
  c.rw.eraseNode(n);
}

Node* addTaking(StepContext& c, Node* n, const std::string& op, std::vector<Value*> inputs,
                std::vector<AP> attrs = {}) {
  std::vector<std::string> outs(n->outputs().size());
  Node* m = c.rw.createNode(*n->graph(), n, {n->name().str(), op, "", std::move(inputs), std::move(outs)});
  for (auto& a : attrs) c.rw.setAttribute(m, std::move(a));
  return m;
}

std::string base(const Node& n) { return n.name().empty() ? n.opType() : n.name().str(); }

// Softmax / LogSoftmax / Hardmax 13 -> 11: 13 normalizes along `axis` alone,
// 11 over the flattened axes from `axis` on. They agree when the axis is the
// last one; otherwise the axis is moved last and back with Transposes.
StepResult softmaxAxis(Node* n, StepContext& c) {
  int64_t axis = intAttr(*n, "axis", -1);
  int64_t rank = rankOf(n->input(0));
  if (axis == -1 || (rank > 0 && axis == rank - 1)) {
    c.rw.setAttribute(n, intAttribute("axis", -1));
    return {{n}, ""};
  }
  if (rank < 0)
    return {{},
            "axis " + std::to_string(axis) + " is not known to be the last one: the input's rank is unknown " +
                kMakeStatic};
  if (axis < -rank || axis >= rank)
    return {{}, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank)};
  if (axis < 0) axis += rank;
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(axis)], perm.back());  // its own inverse
  Node* pre = add(c, n, base(*n) + "/axis_last", "Transpose", {n->input(0)}, 1, {intsAttr("perm", perm)});
  Node* op = add(c, n, base(*n) + "/last_axis", n->opType(), {pre->output(0)}, 1, {intAttribute("axis", -1)});
  Node* post = addTaking(c, n, "Transpose", {op->output(0)}, {intsAttr("perm", perm)});
  takeOver(c, n, post);
  return {{pre, op, post}, ""};
}

// Squeeze / Unsqueeze 13 -> 11: the axes input becomes the attribute.
StepResult axesToAttribute(Node* n, StepContext& c) {
  std::string why;
  auto axes = constInts(c, n, 1, why);
  if (!why.empty()) return {{}, "axes " + why};
  if (!axes && n->opType() == "Unsqueeze") return {{}, "Unsqueeze has no axes"};
  c.rw.setInputs(n, {n->input(0)});
  if (axes) c.rw.setAttribute(n, intsAttr("axes", *axes));
  return {{n}, ""};
}

// ReduceSum 13 -> 11: the axes input becomes the attribute; noop_with_empty_axes goes.
StepResult reduceSumAxes(Node* n, StepContext& c) {
  std::string why;
  auto axes = constInts(c, n, 1, why);
  if (!why.empty()) return {{}, "axes " + why};
  bool noop = intAttr(*n, "noop_with_empty_axes", 0) != 0;
  c.rw.removeAttribute(n, "noop_with_empty_axes");
  c.rw.setInputs(n, {n->input(0)});
  if (!axes || axes->empty()) {
    if (noop) {  // reduces nothing: the input itself
      c.rw.removeAttribute(n, "keepdims");
      c.rw.setOp(n, "Identity", "");
    }
    return {{n}, ""};
  }
  c.rw.setAttribute(n, intsAttr("axes", *axes));
  return {{n}, ""};
}

// Split 13 -> 11: the split input becomes the attribute.
StepResult splitInput(Node* n, StepContext& c) {
  std::string why;
  auto split = constInts(c, n, 1, why);
  if (!why.empty()) return {{}, "split " + why};
  c.rw.setInputs(n, {n->input(0)});
  if (split) c.rw.setAttribute(n, intsAttr("split", *split));
  return {{n}, ""};
}

// Shape 15 -> 13: start / end become a Slice of the whole shape.
StepResult shapeStartEnd(Node* n, StepContext& c) {
  // Read before the attributes go (removing one invalidates pointers to them).
  const bool hasEnd = n->attribute("end") != nullptr;
  const int64_t start = intAttr(*n, "start", 0), end = intAttr(*n, "end", INT64_MAX);
  c.rw.removeAttribute(n, "start");
  c.rw.removeAttribute(n, "end");
  if (start == 0 && !hasEnd) return {{n}, ""};
  Node* shape = add(c, n, base(*n) + "/whole", "Shape", {n->input(0)}, 1);
  std::vector<Node*> nodes{shape};
  Value* starts = intsConstant(c, n, {start}, "/start");
  Value* ends = intsConstant(c, n, {end}, "/end");
  Value* axes = intsConstant(c, n, {0}, "/axes");
  for (Value* v : {starts, ends, axes}) addProducer(nodes, v);
  Node* slice = addTaking(c, n, "Slice", {shape->output(0), starts, ends, axes});
  takeOver(c, n, slice);
  nodes.push_back(slice);
  return {nodes, ""};
}

bool isRead(const Value* v) { return v && (!v->uses().empty() || v->graphOutputCount() > 0); }

// Dropout 12 -> 10: ratio back to an attribute. Dropout 10 drops in training
// sessions and is the identity in inference ones, so a training-mode Dropout
// has that form only when converting for training (OpsetOptions::training),
// and then its ratio must be a constant; its mask stays only where read.
StepResult dropoutInputs(Node* n, StepContext& c) {
  std::optional<float> ratio;
  if (Value* r = n->input(1))
    if (const HostTensor* t = c.weights.constantValue(r); t && t->type != TP::BOOL)
      if (auto value = t->scalar()) ratio = static_cast<float>(*value);
  bool training = false;
  if (Value* mode = n->input(2)) {
    const HostTensor* t = c.weights.constantValue(mode);
    if (!t) return {{}, "training_mode '" + mode->name() + "' is not a constant"};
    training = t->count() != 1 || t->data.find_first_not_of('\0') != std::string::npos;
  }
  bool maskRead = n->outputs().size() > 1 && isRead(n->output(1));
  // Ratio 0 drops nothing, in training too (torchvision's Swin writes it): an Identity.
  if (training && ratio && *ratio == 0.0f && !maskRead) {
    if (n->outputs().size() > 1) c.rw.reshapeOutputs(n, {0}, {""});
    Node* id = addTaking(c, n, "Identity", {n->input(0)});
    takeOver(c, n, id);
    return {{id}, ""};
  }
  if (training && !c.training)
    return {{},
            "training_mode is true: training-mode Dropout has no form before opset 12 outside training "
            "(convert with --training for a runtime that drops in training sessions, as PopART does)"};
  // In inference mode the ratio does nothing: a non-constant one is dropped.
  if (training && n->input(1) && !ratio)
    return {{}, "ratio '" + n->input(1)->name() + "' is not a constant float: Dropout 10 needs it as an attribute"};
  c.rw.setInputs(n, {n->input(0)});
  if (training && n->outputs().size() > 1 && !maskRead) c.rw.reshapeOutputs(n, {0}, {""});
  c.rw.removeAttribute(n, "seed");
  if (ratio) c.rw.setAttribute(n, floatAttr("ratio", *ratio));
  return {{n}, ""};
}

// Pow 12 -> 7: base and exponent must have one type: the exponent is cast.
StepResult powTypes(Node* n, StepContext& c) {
  int32_t b = elemTypeOf(n->input(0)), e = elemTypeOf(n->input(1));
  if (b && e && b != e) {
    Node* cast = add(c, n, base(*n) + "/exponent", "Cast", {n->input(1)}, 1, {intAttribute("to", b)});
    c.rw.setInput(n, 1, cast->output(0));
    return {{cast, n}, ""};
  }
  return {{n}, ""};
}

// Reshape 14 -> 13: allowzero 1 only matters when the shape holds a 0.
StepResult reshapeAllowZero(Node* n, StepContext& c) {
  if (intAttr(*n, "allowzero", 0) != 0) {
    std::string why;
    auto shape = constInts(c, n, 1, why);
    if (!shape) return {{}, "allowzero is 1 and the shape " + (why.empty() ? "is missing" : why)};
    for (int64_t d : *shape)
      if (d == 0) return {{}, "allowzero is 1 and the shape holds a 0 (an empty dimension): no form before opset 14"};
  }
  c.rw.removeAttribute(n, "allowzero");
  return {{n}, ""};
}

// BatchNormalization 14 -> 9: the inference form, or when converting for
// training the training form: five outputs (Y, the running mean and variance,
// the batch's saved mean and variance), which PopART takes as training
// (willow/src/op/batchnorm.cpp:64-66 "If we have the optional outputs we can
// assume we are training"; :98 warns below 5). Opset 9's running-statistic
// update is 14's: running * momentum + batch * (1 - momentum).
StepResult batchNormTo9(Node* n, StepContext& c) {
  if (intAttr(*n, "training_mode", 0) != 0) {
    if (!c.training)
      return {{}, "training_mode is 1: no form before opset 14 outside training (convert with --training)"};
    c.rw.removeAttribute(n, "training_mode");
    std::vector<int> from;
    std::vector<std::string> fresh;
    const char* names[] = {"", "running_mean", "running_var", "saved_mean", "saved_var"};
    for (int i = 0; i < 5; ++i) {
      bool kept = i < 3 && static_cast<size_t>(i) < n->outputs().size() && n->output(i);
      from.push_back(kept ? i : -1);
      fresh.push_back(kept ? "" : base(*n) + "/" + names[i]);
    }
    c.rw.reshapeOutputs(n, from, fresh);
    return {{n}, ""};
  }
  for (size_t i = 1; i < n->outputs().size(); ++i)
    if (Value* v = n->output(i))
      if (!v->uses().empty() || v->graphOutputCount() > 0)
        return {{}, "output '" + v->name() + "' (running statistics) is used: no form before opset 14"};
  c.rw.removeAttribute(n, "training_mode");
  if (n->outputs().size() > 1) c.rw.reshapeOutputs(n, {0}, {""});
  return {{n}, ""};
}

// CastLike 15: a Cast to the type of its second input.
StepResult castLike(Node* n, StepContext& c) {
  int32_t to = elemTypeOf(n->input(1));
  if (!to) return {{}, "the type of '" + (n->input(1) ? n->input(1)->name().str() : std::string("?")) + "' is unknown"};
  Node* cast = addTaking(c, n, "Cast", {n->input(0)}, {intAttribute("to", to)});
  takeOver(c, n, cast);
  return {{cast}, ""};
}

// Constant 12 -> 11: value_float(s) / value_int(s) / value_string(s) become a tensor.
StepResult constantValue(Node* n, StepContext& c) {
  if (n->attributes().size() != 1) return {{}, "a Constant needs exactly one value attribute"};
  const AP& a = n->attributes()[0].proto();
  if (a.name() == "value" || a.name() == "sparse_value") return {{n}, ""};
  TP t;
  if (a.name() == "value_float") {
    t.set_data_type(TP::FLOAT);
    t.add_float_data(a.f());
  } else if (a.name() == "value_floats") {
    t.set_data_type(TP::FLOAT);
    t.add_dims(a.floats_size());
    for (float f : a.floats()) t.add_float_data(f);
  } else if (a.name() == "value_int") {
    t.set_data_type(TP::INT64);
    t.add_int64_data(a.i());
  } else if (a.name() == "value_ints") {
    t.set_data_type(TP::INT64);
    t.add_dims(a.ints_size());
    for (int64_t i : a.ints()) t.add_int64_data(i);
  } else if (a.name() == "value_string") {
    t.set_data_type(TP::STRING);
    t.add_string_data(a.s());
  } else if (a.name() == "value_strings") {
    t.set_data_type(TP::STRING);
    t.add_dims(a.strings_size());
    for (const auto& s : a.strings()) t.add_string_data(s);
  } else {
    return {{}, "attribute '" + a.name() + "' has no form before opset 12"};
  }
  std::string name = a.name();
  AP value;
  value.set_name("value");
  value.set_type(AP::TENSOR);
  *value.mutable_t() = std::move(t);
  c.rw.removeAttribute(n, name);
  c.rw.setAttribute(n, std::move(value));
  return {{n}, ""};
}

// Resize 13 -> 11: roi and scales were not optional; empty ones stand for
// them. With align_corners, runtimes read scales differently at 11 and 13
// (ONNX Runtime gives other numbers): the scales become sizes, which both
// read alike, when the input's shape is static.
StepResult resizeInputs(Node* n, StepContext& c) {
  std::vector<Value*> inputs = n->inputs();
  inputs.resize(std::max<size_t>(inputs.size(), 3));
  std::vector<Node*> nodes;
  HostTensor empty{TP::FLOAT, {0}, {}};
  const Attribute* mode = n->attribute("coordinate_transformation_mode");
  bool alignCorners = mode && mode->proto().s() == "align_corners";
  const HostTensor* scales = inputs[2] ? c.weights.constantValue(inputs[2]) : nullptr;
  bool hasScales = inputs[2] && (!scales || scales->count() > 0);
  bool hasSizes = inputs.size() > 3 && inputs[3];
  if (alignCorners && hasScales && !hasSizes) {
    const auto* shape = shapeOf(n->input(0));
    if (!scales || scales->type != TP::FLOAT || !shape || scales->count() != shape->dim_size())
      return {{}, "align_corners with scales needs constant float scales and a known input shape " + kMakeStatic};
    std::vector<int64_t> sizes;
    for (int d = 0; d < shape->dim_size(); ++d) {
      if (!shape->dim(d).has_dim_value())
        return {{}, "align_corners with scales needs a static input shape " + kMakeStatic};
      float f;
      std::memcpy(&f, scales->data.data() + 4 * static_cast<size_t>(d), 4);
      sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(shape->dim(d).dim_value()) * f)));
    }
    Value* sz = intsConstant(c, n, sizes, "/sizes");
    addProducer(nodes, sz);
    inputs.resize(4);
    inputs[2] = nullptr;
    inputs[3] = sz;
  }
  if (!inputs[1]) addProducer(nodes, inputs[1] = c.weights.constant(*n->graph(), n, empty, base(*n) + "/roi"));
  if (!inputs[2]) addProducer(nodes, inputs[2] = c.weights.constant(*n->graph(), n, empty, base(*n) + "/scales"));
  c.rw.setInputs(n, inputs);
  nodes.push_back(n);
  return {nodes, ""};
}

// Trilu 14 (no earlier form): Where(mask, x, 0) with a constant mask over the
// last two dimensions, which must be static, and a constant k.
StepResult triluMask(Node* n, StepContext& c) {
  const auto* shape = shapeOf(n->input(0));
  int32_t type = elemTypeOf(n->input(0));
  if (!shape || shape->dim_size() < 2 || !type)
    return {{}, "Trilu's input needs a known type and rank >= 2 " + kMakeStatic};
  int64_t rows = shape->dim(shape->dim_size() - 2).has_dim_value() ? shape->dim(shape->dim_size() - 2).dim_value() : -1;
  int64_t cols = shape->dim(shape->dim_size() - 1).has_dim_value() ? shape->dim(shape->dim_size() - 1).dim_value() : -1;
  if (rows < 0 || cols < 0) return {{}, "Trilu's last two dimensions are not static " + kMakeStatic};
  if (static_cast<double>(rows) * static_cast<double>(cols) > 64.0 * 1024 * 1024)
    return {{}, "Trilu's mask would be over 64 MiB"};
  int64_t k = 0;
  if (n->input(1)) {
    std::string why;
    auto kv = constInts(c, n, 1, why);
    if (!kv || kv->size() != 1) return {{}, "k " + (why.empty() ? std::string("is not one integer") : why)};
    k = (*kv)[0];
  }
  bool upper = intAttr(*n, "upper", 1) != 0;
  HostTensor mask{TP::BOOL, {rows, cols}, std::string(static_cast<size_t>(rows * cols), '\0')};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.data[static_cast<size_t>(i * cols + j)] = (upper ? j - i >= k : j - i <= k) ? 1 : 0;
  HostTensor zero{type, {}, std::string(elementSize(type), '\0')};
  std::vector<Node*> nodes;
  Value* m = c.weights.constant(*n->graph(), n, mask, base(*n) + "/mask");
  Value* z = c.weights.constant(*n->graph(), n, zero, base(*n) + "/zero");
  addProducer(nodes, m);
  addProducer(nodes, z);
  Node* where = addTaking(c, n, "Where", {m, n->input(0), z});
  takeOver(c, n, where);
  nodes.push_back(where);
  return {nodes, ""};
}

// QuantizeLinear / DequantizeLinear 13 -> 10: per-tensor (scalar scale) only.
StepResult quantizeAxis(Node* n, StepContext& c) {
  Value* scale = n->input(1);
  int64_t rank = rankOf(scale);
  const HostTensor* t = scale ? c.weights.constantValue(scale) : nullptr;
  bool scalar = rank == 0 || (t && t->dims.empty());
  if (!scalar) return {{}, "a scale that is not a scalar (per-axis quantization) has no form before opset 13"};
  c.rw.removeAttribute(n, "axis");
  return {{n}, ""};
}

const std::map<std::pair<std::string, int64_t>, Adapter>& adapters() {
  static const std::map<std::pair<std::string, int64_t>, Adapter> table = {
      {{"Softmax", 13}, softmaxAxis},
      {{"LogSoftmax", 13}, softmaxAxis},
      {{"Hardmax", 13}, softmaxAxis},
      {{"Squeeze", 13}, axesToAttribute},
      {{"Unsqueeze", 13}, axesToAttribute},
      {{"ReduceSum", 13}, reduceSumAxes},
      {{"Split", 13}, splitInput},
      {{"Shape", 15}, shapeStartEnd},
      {{"Dropout", 12}, dropoutInputs},
      {{"Pow", 12}, powTypes},
      {{"Reshape", 14}, reshapeAllowZero},
      {{"BatchNormalization", 14}, batchNormTo9},
      {{"CastLike", 15}, castLike},
      {{"Constant", 12}, constantValue},
      {{"Resize", 13}, resizeInputs},
      {{"Trilu", 14}, triluMask},
      {{"QuantizeLinear", 13}, quantizeAxis},
      {{"DequantizeLinear", 13}, quantizeAxis},
  };
  return table;
}

}  // namespace

Adapter downAdapter(const std::string& op, int64_t version) {
  auto it = adapters().find({op, version});
  return it == adapters().end() ? nullptr : it->second;
}

}  // namespace graphrw::passes::opset
