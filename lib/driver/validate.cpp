#include "driver/validate.h"

#include "analysis/schemas.h"
#include "target/popart/graphcore_ops.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <spdlog/spdlog.h>

#include <iostream>
#include <set>
#include <sstream>

#include "analysis/opsets.h"
#include "io/writer.h"
#include "ir/verifier.h"
#include "support/external_data.h"
#include "target/popart/popart.h"

namespace graphrw {

using namespace ir;

namespace {

constexpr size_t kMaxInferenceCallDepth = 4096;

// ONNX's checker writes a warning to std::cerr for every node whose op type
// was once an experimental ONNX op (Scale, DynamicSlice, ...), whatever its
// domain, so ai.graphcore::Scale triggers it. graphrw's stderr keeps to its
// own one-line messages: the text is collected and logged at debug level.
class CerrToDebug {
 public:
  CerrToDebug() : old_(std::cerr.rdbuf(captured_.rdbuf())) {}
  ~CerrToDebug() {
    std::cerr.rdbuf(old_);
    std::set<std::string> seen;
    std::istringstream lines(captured_.str());
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && seen.insert(line).second) spdlog::debug("onnx: {}", line);
  }

 private:
  std::ostringstream captured_;
  std::streambuf* old_;
};

void checkStructure(const onnx::ModelProto& proto, const std::string& modelDir) {
  namespace ck = onnx::checker;
  if (!proto.has_ir_version()) throw ck::ValidationError("the model has no ir_version");
  ck::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(proto.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& op : proto.opset_import()) opsets[op.domain()] = static_cast<int>(op.version());
  if (opsets.empty()) throw ck::ValidationError("the model has no opset_import");
  ctx.set_opset_imports(opsets);
  ctx.set_model_dir(modelDir);
  ck::LexicalScopeContext lex;
  registerGraphcoreOps();  // the checker looks schemas up in ONNX's registry itself
  CerrToDebug quiet;
  ck::check_graph(proto.graph(), ctx, lex);
  if (proto.ir_version() >= 8) ck::check_model_local_functions(proto, ctx, lex);
}

void inferStrict(onnx::ModelProto& proto) {
  onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*data_propagation=*/true);
  onnx::shape_inference::InferShapes(proto, schemaRegistry(), options);
}

// Tensors whose data disagrees with their dims (ONNX Runtime refuses them; ONNX 1.12's checker does not look).
void checkTensorData(const onnx::GraphProto& g, const std::string& where, std::vector<ValidationFinding>& findings) {
  for (const auto& t : g.initializer())
    if (auto problem = tensorDataProblem(t))
      findings.push_back({"checker", where, "initializer '" + t.name() + "': " + *problem});
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      std::string at = "node '" + n.name() + "' (" + n.op_type() + ") attribute '" + a.name() + "'";
      if (a.has_t())
        if (auto problem = tensorDataProblem(a.t())) findings.push_back({"checker", where, at + ": " + *problem});
      for (const auto& t : a.tensors())
        if (auto problem = tensorDataProblem(t)) findings.push_back({"checker", where, at + ": " + *problem});
      if (a.has_g()) checkTensorData(a.g(), where + " > " + at, findings);
      for (const auto& sub : a.graphs()) checkTensorData(sub, where + " > " + at, findings);
    }
}

}  // namespace

std::vector<ValidationFinding> validateModel(Model& model) {
  std::vector<ValidationFinding> findings;
  std::string dir = model.externalFiles() ? model.externalFiles()->baseDir().string() : ".";
  onnx::ModelProto proto = toProto(model);
  try {
    checkStructure(proto, dir);
  } catch (const std::exception& e) {
    findings.push_back({"checker", "model", e.what()});
  }
  // ONNX's inference recurses through every call: past this depth it would
  // exhaust the stack, so it is not run (and that is a finding).
  if (size_t depth = callDepth(model); depth > kMaxInferenceCallDepth) {
    findings.push_back({"shape-inference", "model",
                        "not run: local function calls nest " + std::to_string(depth) +
                            " deep, over graphrw's limit of " + std::to_string(kMaxInferenceCallDepth) +
                            " for ONNX's recursive inference (expand first)"});
  } else {
    try {
      inferStrict(proto);
    } catch (const std::exception& e) {
      // ONNX 1.12's data propagation wrongly reuses what it propagated
      // through a function's Shape at one call for the next call of that
      // function (fixed upstream in onnx PR #5223): a model that passes
      // without data propagation is not reported for it.
      std::string first = e.what();
      try {
        onnx::ModelProto again = toProto(model);
        onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*data_propagation=*/false);
        onnx::shape_inference::InferShapes(again, schemaRegistry(), options);
        spdlog::debug("validate: strict shape inference passes without data propagation; ignored: {}", first);
      } catch (const std::exception&) {
        findings.push_back({"shape-inference", "model", first});
      }
    }
  }
  checkTensorData(proto.graph(), "graph '" + proto.graph().name() + "'", findings);
  for (const auto& f : proto.functions()) {
    onnx::GraphProto body;
    *body.mutable_node() = f.node();
    checkTensorData(body, "function " + f.domain() + "::" + f.name(), findings);
  }
  for (auto& f : verify(model)) findings.push_back({"verifier", f.where, f.message});
  std::function<void(Graph&, const std::string&)> popartCheck = [&](Graph& g, const std::string& where) {
    for (const auto& n : g.nodes()) {
      for (const auto& a : n->attributes())
        if (a.name().starts_with("__"))
          for (auto& problem : popart::checkAttribute(a.proto()))
            findings.push_back({"popart", where, nodeLabel(*n) + ": " + problem});
      for (Graph* sub : n->subgraphs()) popartCheck(*sub, where + " > node '" + n->name() + "'");
    }
  };
  popartCheck(model.graph(), "graph '" + model.graph().residual().name() + "'");
  for (const auto& f : model.functions()) popartCheck(f->body(), "function " + f->key().str());
  return findings;
}

}  // namespace graphrw
