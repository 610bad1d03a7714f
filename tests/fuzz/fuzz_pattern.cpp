// libFuzzer: pattern rules on a model. The input is three parts separated by
// lines "%%": a model in ONNX's text syntax (empty: the match's own body, its
// inputs float[2, 4]), the match and the replacement (ONNX function text, as a
// rule file holds them). The rule goes through parseRules (schema, both
// templates checked standalone), the model through the loader and the
// verifier; the pattern pass then runs with verify-each and the result is
// serialized. A graphrw::Error is a clean refusal, except a verifier finding
// after the pass or an internal error: those, a crash, a sanitizer report, a
// hang or another exception are bugs.
#include <onnx/defs/parser.h>

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "fuzz_common.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/verifier.h"
#include "support/buffer.h"
#include "support/error.h"
#include "target/popart/graphcore_ops.h"

namespace {

// ONNX's text parser recurses without a limit: the model part (not a surface
// graphrw reads; models come as binary protobuf) is kept shallow.
bool shallow(const std::string& text, int limit) {
  int depth = 0;
  for (char c : text) {
    if (c == '{' || c == '[' || c == '<' || c == '(') ++depth;
    if (c == '}' || c == ']' || c == '>' || c == ')') --depth;
    if (depth > limit) return false;
  }
  return true;
}

// The model: from its text, or made of the match's body.
std::optional<onnx::ModelProto> modelOf(const std::string& text, const std::string& match) {
  onnx::ModelProto model;
  try {
    if (!text.empty()) {
      if (!shallow(text, 24) || !onnx::OnnxParser::Parse(model, text.c_str()).IsOK()) return std::nullopt;
      return model;
    }
    onnx::FunctionProto fp;
    if (!shallow(match, 24) || !onnx::OnnxParser::Parse(fp, match.c_str()).IsOK()) return std::nullopt;
    model.set_ir_version(8);
    *model.mutable_opset_import() = fp.opset_import();
    auto* g = model.mutable_graph();
    g->set_name("fuzz");
    for (const auto& in : fp.input()) {
      auto* vi = g->add_input();
      vi->set_name(in);
      auto* t = vi->mutable_type()->mutable_tensor_type();
      t->set_elem_type(onnx::TensorProto::FLOAT);
      t->mutable_shape()->add_dim()->set_dim_value(2);
      t->mutable_shape()->add_dim()->set_dim_value(4);
    }
    for (const auto& out : fp.output()) g->add_output()->set_name(out);
    *g->mutable_node() = fp.node();
  } catch (const std::exception&) {  // the parser's std::stol / std::stof
    return std::nullopt;
  }
  return model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Warnings (a rule that matched nothing) would flood the log: errors only.
  static const bool registered = (graphrw::registerGraphcoreOps(), spdlog::set_level(spdlog::level::err), true);
  (void)registered;
  if (size > 16384) return 0;
  std::string input(reinterpret_cast<const char*>(data), size);
  const std::string sep = "\n%%\n";
  size_t a = input.find(sep);
  if (a == std::string::npos) return 0;
  size_t b = input.find(sep, a + sep.size());
  if (b == std::string::npos) return 0;
  std::string modelText = input.substr(0, a), match = input.substr(a + sep.size(), b - a - sep.size()),
              replace = input.substr(b + sep.size());
  try {
    nlohmann::json rule = {{"match", match}, {"replace", replace}};
    nlohmann::json pass = {{"pass", "pattern"}, {"allow_no_match", true}, {"rules", nlohmann::json::array({rule})}};
    nlohmann::json file = {{"version", 1}, {"passes", nlohmann::json::array({pass})}};
    // Bytes that are not UTF-8 become U+FFFD: a rule file cannot hold them.
    std::string text = file.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    graphrw::RuleFile rules = graphrw::parseRules(text, "fuzz.rules.json");
    auto proto = modelOf(modelText, match);
    if (!proto) return 0;
    auto bytes = graphrw::Buffer::fromString(proto->SerializeAsString());
    auto model = graphrw::loadModel(bytes, "/nonexistent-graphrw-fuzz", "fuzz");
    if (!graphrw::verify(*model).empty()) return 0;  // not an input passes are given
    graphrw::fuzz::runPasses(*model, rules.passes);
  } catch (const graphrw::Error& e) {
    graphrw::fuzz::abortOnBug(e);
  }
  return 0;
}
