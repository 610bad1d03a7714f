#include "passes/set_shapes/set_shapes.h"

#include <charconv>
#include <set>
#include <unordered_map>
#include <vector>

#include "analysis/types.h"
#include "support/error.h"
#include "support/json_text.h"

namespace graphrw::passes {
namespace {

using namespace ir;

std::string shapeText(const onnx::TensorShapeProto& s) {
  std::string t = "[";
  for (int i = 0; i < s.dim_size(); ++i) {
    if (i) t += ",";
    const auto& d = s.dim(i);
    t += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
  }
  return t + "]";
}

// Whether `now` says at least what `was` said: same kind and element type,
// a shape when `was` had one, each dimension `was` fixed still fixed.
bool asSpecific(const onnx::TypeProto& now, const onnx::TypeProto& was) {
  if (now.value_case() != was.value_case()) return false;
  if (!now.has_tensor_type()) return now.SerializeAsString() == was.SerializeAsString();
  const auto &a = now.tensor_type(), &b = was.tensor_type();
  if (b.elem_type() && a.elem_type() != b.elem_type()) return false;
  if (!b.has_shape()) return true;
  if (!a.has_shape() || a.shape().dim_size() != b.shape().dim_size()) return false;
  for (int i = 0; i < b.shape().dim_size(); ++i)
    if (b.shape().dim(i).has_dim_value() && !a.shape().dim(i).has_dim_value()) return false;
  return true;
}

class SetShapesRun {
 public:
  SetShapesRun(const SetShapesOptions& options, Model& model, Rewriter& rw)
      : options_(options), model_(model), rw_(rw) {}

  // Long: the inputs fixed, then shapes propagated and declared, in one pass over the model whose
  // bookkeeping (what was set, what became static) the report needs.
  void run(PassContext& context) {
    Graph& g = model_.graph();
    std::vector<Value*> inputs;
    std::vector<std::string> names;
    for (const auto& in : g.inputs())
      if (!in.value->isInitializer()) {
        inputs.push_back(in.value);
        names.push_back(in.value->name().str());
      }
    checkDimNames(g, inputs);
    std::map<Value*, onnx::TypeProto> wanted;
    for (const auto& [name, dims] : options_.inputs) {
      Value* v = nullptr;
      for (Value* in : inputs)
        if (in->name() == name) v = in;
      if (!v) {
        auto hint = didYouMean(name, names);
        usageError("set-shapes: the model has no input '" + escapeControl(name) + "'" +
                   (hint ? " (did you mean '" + escapeControl(*hint) + "'?)" : ""));
      }
      onnx::TypeProto t = declared(g, v);
      if (!t.has_tensor_type()) usageError("set-shapes: input '" + escapeControl(name) + "' is not a tensor");
      auto* shape = t.mutable_tensor_type()->mutable_shape();
      if (t.tensor_type().has_shape() && shape->dim_size() != static_cast<int>(dims.size()) &&
          !(shape->dim_size() == 0 && !hadShape(g, v)))
        usageError("set-shapes: input '" + escapeControl(name) + "' has shape " + shapeText(*shape) + " (rank " +
                   std::to_string(shape->dim_size()) + "), not " + std::to_string(dims.size()) + " dimensions");
      if (shape->dim_size() == 0) shape->mutable_dim()->Clear();
      bool sized = shape->dim_size() == static_cast<int>(dims.size());
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] < 0)
          usageError("set-shapes: input '" + escapeControl(name) + "': dimension " + std::to_string(dims[i]) +
                     " is negative");
        // --dim for a dimension of this input too: both must agree.
        if (const auto* d = sized ? &shape->dim(static_cast<int>(i)) : nullptr; d && d->has_dim_param())
          if (auto it = options_.dims.find(d->dim_param()); it != options_.dims.end() && it->second != dims[i])
            usageError("set-shapes: --input " + escapeControl(name) + " gives dimension " + std::to_string(i) + " ('" +
                       escapeControl(d->dim_param()) + "') as " + std::to_string(dims[i]) + ", but --dim " +
                       escapeControl(d->dim_param()) + "=" + std::to_string(it->second));
        if (sized && shape->dim(static_cast<int>(i)).has_dim_value() &&
            shape->dim(static_cast<int>(i)).dim_value() != dims[i])
          usageError("set-shapes: input '" + escapeControl(name) + "' has shape " + shapeText(*shape) + ": dimension " +
                     std::to_string(i) + " is fixed at " + std::to_string(shape->dim(static_cast<int>(i)).dim_value()) +
                     ", not " + std::to_string(dims[i]));
      }
      shape->mutable_dim()->Clear();
      for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
      wanted[v] = t;
    }
    for (Value* v : inputs) {
      if (options_.inputs.count(v->name().str())) continue;
      onnx::TypeProto t = declared(g, v);
      if (!t.has_tensor_type() || !t.tensor_type().has_shape()) continue;
      bool changed = false;
      for (auto& d : *t.mutable_tensor_type()->mutable_shape()->mutable_dim()) {
        if (!d.has_dim_param()) continue;
        auto it = options_.dims.find(d.dim_param());
        if (it == options_.dims.end()) continue;
        if (it->second < 0) usageError("set-shapes: dimension '" + escapeControl(it->first) + "' is negative");
        d.set_dim_value(it->second);
        changed = true;
      }
      if (changed) wanted[v] = t;
    }
    for (auto& [v, t] : wanted) rw_.declareType(g, v, t);

    // Propagate: every type below the inputs is inferred again.
    // Its graph is the value's own (v->graph()): 8 bytes a value, sized once.
    std::vector<Value*> values;
    size_t count = 0;
    model_.graph().walkGraphs([&](Graph& sub) { count += sub.valueCount(); });
    values.reserve(count);
    model_.graph().walkGraphs([&](Graph& sub) {
      for (const auto& v : sub.values())
        if (!v->isGraphInput() && !v->isInitializer()) values.push_back(v.get());
    });
    // Each value's type before: the model's interned copy (it outlives forgetType),
    // one pointer a value where a map of copies took hundreds of bytes.
    std::vector<const onnx::TypeProto*> before(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      if (Value* v = values[i]; v->type()) {
        before[i] = v->type();
        rw_.forgetType(v);
      }
    inferInOrder(rw_);
    inferMissingTypes(rw_);  // calls and what per-node inference left
    // Every written value may get a value_info entry: room for them at once,
    // not a list doubling (old and new arrays at once) while a million are added.
    std::unordered_map<Graph*, size_t> writable;
    for (Value* v : values)
      if (v->graphOutputCount() > 0 || v->producer()) writable[v->graph()]++;
    for (auto [sub, entries] : writable) rw_.expectDeclarations(*sub, entries);
    size_t declared = 0, outputsStatic = 0, outputs = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      Value* v = values[i];
      Graph* sub = v->graph();
      const onnx::TypeProto* old = before[i];
      // A dimension named by --dim has that size wherever the name appears
      // (ONNX: one dim_param, one size), also where inference does not reach.
      onnx::TypeProto substituted;
      bool renamed = false;
      if (old && !options_.dims.empty()) {
        substituted = *old;
        renamed = substituteDims(substituted);
        if (renamed) old = &substituted;
      }
      bool written = v->graphOutputCount() > 0 || v->producer();
      if (!v->type() || (old && !asSpecific(*v->type(), *old))) {
        // Only what inference knows at least as well as the model did is written.
        if (!old) continue;
        if (v->type() && v->graphOutputCount() > 0) checkConsistent(v, *old, *v->type());
        rw_.setType(v, *old);
        if (renamed && written) {
          rw_.declareType(*sub, v, *old);
          declared++;
        }
        continue;
      }
      if (v->graphOutputCount() > 0 && old) checkConsistent(v, *old, *v->type());
      if (written) {
        rw_.declareType(*sub, v, *v->type());
        declared++;
      }
    }
    for (const auto& out : g.outputs()) {
      outputs++;
      if (out.value->type() && fullyStatic(*out.value->type())) outputsStatic++;
    }
    nlohmann::json set = nlohmann::json::object();
    for (auto& [v, t] : wanted) set[v->name()] = shapeText(t.tensor_type().shape());
    context.matched = wanted.size();
    context.details["inputs_set"] = set;
    context.details["types_declared"] = declared;
    context.details["static_outputs"] = std::to_string(outputsStatic) + " of " + std::to_string(outputs);
  }

 private:
  onnx::TypeProto declared(const Graph& g, const Value* v) {
    for (const auto& in : g.inputs())
      if (in.value == v) return in.typeOrEmpty();
    return {};
  }
  bool hadShape(const Graph& g, const Value* v) { return declared(g, v).tensor_type().has_shape(); }

  // Each --dim names a dimension some graph input declares, whether or not
  // --input gives that input's whole shape too (one rule for set-shapes and
  // legalize); else an error listing the inputs' dimensions.
  void checkDimNames(const Graph& g, const std::vector<Value*>& inputs) {
    if (options_.dims.empty()) return;
    std::set<std::string> seen;
    std::string listed;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value* v = inputs[i];
      onnx::TypeProto t = declared(g, v);
      bool shaped = t.has_tensor_type() && t.tensor_type().has_shape();
      if (shaped)
        for (const auto& d : t.tensor_type().shape().dim())
          if (d.has_dim_param()) seen.insert(d.dim_param());
      if (i < 8)
        listed += (listed.empty() ? "" : ", ") + ("'" + escapeControl(v->name()) + "' ") +
                  (shaped ? shapeText(t.tensor_type().shape()) : "(no shape)");
    }
    if (inputs.size() > 8) listed += ", and " + std::to_string(inputs.size() - 8) + " more";
    for (const auto& [dim, _] : options_.dims) {
      if (seen.count(dim)) continue;
      auto hint = didYouMean(dim, std::vector<std::string>(seen.begin(), seen.end()));
      usageError("set-shapes: no input of the model has a dimension named '" + escapeControl(dim) + "'" +
                 (hint ? " (did you mean '" + escapeControl(*hint) + "'?)" : "") +
                 "; the inputs: " + (listed.empty() ? std::string("none") : listed));
    }
  }

  // Replaces the dimensions named by --dim with their sizes; whether any was.
  bool substituteDims(onnx::TypeProto& t) const {
    if (options_.dims.empty() || !t.has_tensor_type() || !t.tensor_type().has_shape()) return false;
    bool changed = false;
    for (auto& d : *t.mutable_tensor_type()->mutable_shape()->mutable_dim())
      if (auto it = d.has_dim_param() ? options_.dims.find(d.dim_param()) : options_.dims.end();
          it != options_.dims.end()) {
        d.set_dim_value(it->second);
        changed = true;
      }
    return changed;
  }

  // A graph output's declared fixed dimensions must survive the new shapes.
  void checkConsistent(const Value* v, const onnx::TypeProto& old, const onnx::TypeProto& now) {
    if (!old.has_tensor_type() || !now.has_tensor_type() || !old.tensor_type().has_shape() ||
        !now.tensor_type().has_shape())
      return;
    const auto &a = old.tensor_type().shape(), &b = now.tensor_type().shape();
    bool clash = a.dim_size() != b.dim_size();
    for (int i = 0; !clash && i < a.dim_size(); ++i)
      clash = a.dim(i).has_dim_value() && b.dim(i).has_dim_value() && a.dim(i).dim_value() != b.dim(i).dim_value();
    if (clash)
      usageError("set-shapes: output '" + escapeControl(v->name()) + "' is declared " + shapeText(a) +
                 " but the new input shapes give " + shapeText(b));
  }

  const SetShapesOptions& options_;
  Model& model_;
  Rewriter& rw_;
};

class SetShapesPass final : public Pass {
 public:
  explicit SetShapesPass(SetShapesOptions options) : options_(std::move(options)) {}
  std::string name() const override { return kSetShapesPass; }
  void run(Model& model, PassContext& context) const override {
    SetShapesRun(options_, model, context.rewriter).run(context);
  }

 private:
  const SetShapesOptions options_;
};

// --input NAME=D,D,... (repeatable) -> {"NAME": [D, D, ...]}
nlohmann::json inputShapes(const std::vector<std::string>& values) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& text : values) {
    auto eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0) usageError("--input '" + escapeControl(text) + "': expected NAME=D,D,...");
    nlohmann::json dims = nlohmann::json::array();
    std::string_view rest(text.data() + eq + 1, text.size() - eq - 1);
    while (true) {
      auto comma = rest.find(',');
      std::string_view part = rest.substr(0, comma);
      int64_t d = 0;
      auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
      if (part.empty() || ec != std::errc() || p != part.data() + part.size())
        usageError("--input '" + escapeControl(text) + "': '" + escapeControl(std::string(part)) +
                   "' is not a dimension");
      dims.push_back(d);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    object[text.substr(0, eq)] = dims;
  }
  return object;
}

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = kSetShapesPass,
    .summary = "Fix graph-input dimensions (by input or by dimension name) and propagate static shapes",
    .description = "Fix graph-input dimensions by input name or by symbolic dimension name, then propagate shapes "
                   "with ONNX's per-op shape inference into value_info and the graph outputs. A shape that "
                   "contradicts the model (rank, a fixed dimension) is an error naming the input.",
    .outputTag = "static",
    .options =
        {
            {.key = "inputs",
             .flags = "--input",
             .kind = Kind::Pairs,
             .help = "An input's whole shape: NAME=D,D,... (repeatable)",
             .schema = {{"type", "object"},
                        {"additionalProperties",
                         {{"type", "array"}, {"items", {{"type", "integer"}, {"minimum", 1}}}}}},
             .convert = inputShapes},
            {.key = "dims",
             .flags = "--dim",
             .kind = Kind::JsonPairs,
             .help = "A symbolic dimension's (dim_param's) value in every graph input that has it, and in every "
                     "declared type that names it: NAME=N (repeatable)",
             .schema = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}, {"minimum", 1}}}}},
        },
    .examples =
        {
            "graphrw set-shapes model.onnx --input input_ids=4,128 --input attention_mask=4,128",
            "graphrw set-shapes model.onnx --dim batch=4 --dim sequence=128",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext& where, const std::string& pointer) {
          SetShapesOptions o;
          if (entry.contains("inputs"))
            for (const auto& [name, dims] : entry["inputs"].items()) o.inputs[name] = dims.get<std::vector<int64_t>>();
          if (entry.contains("dims"))
            for (const auto& [name, value] : entry["dims"].items()) o.dims[name] = value.get<int64_t>();
          if (o.inputs.empty() && o.dims.empty())
            usageError(where.at(pointer) + ": set-shapes needs 'inputs' (--input) or 'dims' (--dim)");
          return createSetShapesPass(std::move(o));
        },
}};

}  // namespace

std::unique_ptr<Pass> createSetShapesPass(SetShapesOptions options) {
  return std::make_unique<SetShapesPass>(std::move(options));
}

nlohmann::json inputShapesFromFlags(const std::vector<std::string>& values) { return inputShapes(values); }

}  // namespace graphrw::passes
