// The opset pass's conversion applied to a function body (a pattern's
// replacement, a schema's or a local function's body being inlined at another
// ai.onnx version): the body becomes a model of its own, the pass converts it
// node by node (graphrw's adapters first, ONNX's converter only for the steps
// graphrw has no knowledge of), and the converted nodes become the body again.
// ONNX's whole-model converter crashes on forms graphrw's adapters know
// (Split-13 without its `split` input going down to 11).
#include "analysis/opsets.h"
#include "io/writer.h"
#include "ir/builder.h"
#include "passes/opset/opset.h"

namespace graphrw::passes {
namespace {

using namespace ir;

std::unique_ptr<Function> convertBody(Model& model, const Function& function, int64_t from, int64_t to) {
  onnx::FunctionProto fp = functionToProto(function);
  onnx::ModelProto mp = functionAsModel(fp, std::max<int64_t>(model.irVersion(), 8), from);
  auto body = buildModel(mp, {}, nullptr);
  Rewriter rw(*body);
  PassContext context{rw};
  OpsetOptions options;
  options.to = to;
  createOpsetPass(options)->run(*body, context);
  onnx::ModelProto converted = toProto(*body);
  takeConvertedBody(fp, converted, to);
  return buildFunction(model, std::move(fp));
}

const bool registered = (setFunctionConverter(&convertBody), true);

}  // namespace
}  // namespace graphrw::passes
