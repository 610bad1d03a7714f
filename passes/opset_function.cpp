// The opset pass's conversion applied to a function body (a pattern's
// replacement, a schema's or a local function's body being inlined at another
// ai.onnx version): the body becomes a model of its own, the pass converts it
// node by node (graphrw's adapters first, ONNX's converter only for the steps
// graphrw has no knowledge of), and the converted nodes become the body again.
// ONNX's whole-model converter crashes on forms graphrw's adapters know
// (Split-13 without its `split` input going down to 11).
#include "analysis/opsets.h"
#include "ir/builder.h"
#include "io/writer.h"
#include "passes/opset.h"

namespace graphrw::passes {
namespace {

using namespace ir;

std::unique_ptr<Function> convertBody(Model& model, const Function& function, int64_t from, int64_t to) {
  onnx::FunctionProto fp = functionToProto(function);
  onnx::ModelProto mp;
  mp.set_ir_version(std::max<int64_t>(model.irVersion(), 8));
  for (const auto& op : fp.opset_import()) {
    auto* o = mp.add_opset_import();
    *o = op;
    if (isDefaultDomain(op.domain())) o->set_version(from);
  }
  auto* g = mp.mutable_graph();
  g->set_name(fp.name());
  for (const auto& in : fp.input()) g->add_input()->set_name(in);
  for (const auto& out : fp.output()) g->add_output()->set_name(out);
  *g->mutable_node() = fp.node();
  auto body = buildModel(mp, {}, nullptr);
  Rewriter rw(*body);
  PassContext context{rw};
  OpsetOptions options;
  options.to = to;
  createOpsetPass(options)->run(*body, context);
  onnx::ModelProto converted = toProto(*body);
  fp.clear_node();
  for (const auto& init : converted.graph().initializer()) {  // constants the adapters added
    auto* c = fp.add_node();
    c->set_op_type("Constant");
    c->add_output(init.name());
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = init;
  }
  for (const auto& n : converted.graph().node()) *fp.add_node() = n;
  for (auto& op : *fp.mutable_opset_import())
    if (isDefaultDomain(op.domain())) op.set_version(to);
  return buildFunction(model, std::move(fp));
}

const bool registered = (setFunctionConverter(&convertBody), true);

}  // namespace
}  // namespace graphrw::passes
