#include "pass_manager.h"

#include <spdlog/spdlog.h>

#include <onnx/defs/printer.h>

#include <chrono>
#include <iostream>
#include <sstream>

#include "error.h"
#include "verifier.h"
#include "writer.h"

namespace graphrw {

std::string printModel(const ir::Model& model) {
  onnx::ModelProto proto = toProto(model);
  for (auto& t : *proto.mutable_graph()->mutable_initializer()) {
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_int32_data();
    t.clear_int64_data();
    t.clear_double_data();
    t.clear_uint64_data();
    t.clear_string_data();
  }
  std::ostringstream os;
  os << proto.graph() << "\n";
  for (const auto& f : proto.functions()) os << f << "\n";
  return os.str();
}

nlohmann::json PassManager::run(ir::Model& model) {
  nlohmann::json report = nlohmann::json::array();
  size_t limit = options_.stopAfter.value_or(passes_.size());
  for (size_t i = 0; i < passes_.size() && i < limit; ++i) {
    const Pass& pass = *passes_[i];
    ir::Rewriter rewriter(model);
    PassContext context{rewriter};
    auto start = std::chrono::steady_clock::now();
    pass.run(model, context);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& c = rewriter.counts();
    nlohmann::json entry = {{"pass", pass.name()},
                            {"index", i},
                            {"matched", context.matched},
                            {"nodes_added", c.nodesAdded},
                            {"nodes_removed", c.nodesRemoved},
                            {"nodes_changed", c.nodesChanged},
                            {"values_renamed", c.valuesRenamed},
                            {"edits",
                             {{"initializers_added", c.initializersAdded},
                              {"initializers_removed", c.initializersRemoved},
                              {"functions_added", c.functionsAdded},
                              {"functions_removed", c.functionsRemoved},
                              {"opset_imports_changed", c.opsetImportsChanged},
                              {"graph_outputs_changed", c.graphOutputsChanged},
                              {"value_info_removed", c.valueInfoRemoved},
                              {"ir_version_changed", c.irVersionChanged},
                              {"types_declared", c.typesDeclared}}},
                            {"changed", c.any()},
                            {"seconds", seconds}};
    for (auto& [k, v] : context.details.items()) entry[k] = v;
    report.push_back(std::move(entry));
    spdlog::debug("pass {} ({}): matched {}, +{} -{} ~{} nodes in {:.3f}s", i, pass.name(), context.matched,
                  c.nodesAdded, c.nodesRemoved, c.nodesChanged, seconds);
    const std::string& want = options_.printIrAfter;
    if (!want.empty() && (want == "all" || want == pass.name() || want == std::to_string(i)))
      std::cerr << "graphrw: IR after pass " << i << " (" << pass.name() << "):\n" << printModel(model) << std::flush;
    if (options_.verifyEach) {
      auto findings = verify(model);
      if (!findings.empty())
        fail(ExitCode::Findings, "IR verifier failed after pass " + std::to_string(i) + " (" + pass.name() + "): " +
                                     findings[0].where + ": " + findings[0].message +
                                     (findings.size() > 1 ? " (and " + std::to_string(findings.size() - 1) + " more)" : ""));
    }
  }
  return report;
}

}  // namespace graphrw
