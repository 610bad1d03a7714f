#include "driver/pass_manager.h"

#include <spdlog/spdlog.h>

#include <onnx/defs/printer.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "io/writer.h"
#include "ir/fingerprint.h"
#include "ir/verifier.h"
#include "support/error.h"

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

namespace {

// GRAPHRW_VERIFY_EACH=1 turns --verify-each on for every pipeline (the test suite sets it).
bool verifyEachFromEnvironment() {
  const char* env = std::getenv("GRAPHRW_VERIFY_EACH");
  return env && std::string_view(env) == "1";
}

// Every node of the model (main graph, subgraphs, function bodies) with its own fingerprint.
using NodePrints = std::unordered_map<const ir::Node*, uint64_t>;
NodePrints nodePrints(const ir::Model& model) {
  NodePrints prints;
  auto add = [&](const ir::Graph& g) {
    for (const auto& n : g.nodes()) prints.emplace(n.get(), ir::nodeFingerprint(*n));
  };
  model.graph().walkGraphs(add);
  for (const auto& f : model.functions()) f->body().walkGraphs(add);
  return prints;
}

// The model's state before a pass, for --verify-each.
struct Before {
  uint64_t model = 0;
  ir::PartFingerprints parts;
  NodePrints nodes;
};

// Each part of the model outside nodes, with the kinds of counted edit that may change it.
struct PartRule {
  const char* what;
  uint64_t ir::PartFingerprints::*part;
  std::vector<size_t ir::ChangeCounts::*> kinds;
};
const std::vector<PartRule>& partRules() {
  using C = ir::ChangeCounts;
  using P = ir::PartFingerprints;
  static const std::vector<PartRule> rules = {
      {"the IR version", &P::irVersion, {&C::irVersionChanged}},
      {"the opset imports", &P::opsetImports, {&C::opsetImportsChanged, &C::functionsAdded, &C::functionsRemoved}},
      {"the initializers", &P::initializers, {&C::initializersAdded, &C::initializersRemoved, &C::valuesRenamed}},
      {"the graph outputs", &P::graphOutputs, {&C::graphOutputsChanged, &C::valuesRenamed, &C::typesDeclared}},
      {"the graph inputs", &P::graphInputs, {&C::valuesRenamed, &C::typesDeclared, &C::initializersRemoved}},
      // An entry follows its value: nodes made (an inlined body's entries) or erased bring and take theirs.
      {"the value_info entries",
       &P::valueInfo,
       {&C::valueInfoRemoved, &C::typesDeclared, &C::valuesRenamed, &C::nodesAdded, &C::nodesRemoved}},
      {"the local functions", &P::functions, {&C::functionsAdded, &C::functionsRemoved}},
      {"the model's, graphs' or functions' doc strings",
       &P::docStrings,
       {&C::docStringsChanged, &C::functionsAdded, &C::functionsRemoved}},
  };
  return rules;
}

// What --verify-each finds after a pass: the IR's invariants, and whether the
// edits the Rewriter counted agree with what changed (a pass that changes the
// model behind the Rewriter's back, or counts edits it did not make, is wrong):
// for the whole model, and node by node, so one counted edit cannot hide another.
void verifyAfter(ir::Model& model, const Pass& pass, size_t index, const Before& before, const ir::Rewriter& rewriter,
                 size_t matched) {
  const ir::ChangeCounts& counts = rewriter.counts();
  bool counted = counts.any();
  std::string label = "pass " + std::to_string(index) + " (" + pass.name() + ")";
  auto findings = verify(model);
  if (!findings.empty())
    fail(ExitCode::Findings,
         "IR verifier failed after " + label + ": " + findings[0].where + ": " + findings[0].message +
             (findings.size() > 1 ? " (and " + std::to_string(findings.size() - 1) + " more)" : ""));
  bool changed = ir::fingerprint(model) != before.model;
  if (changed && !counted)
    fail(ExitCode::Findings, label +
                                 " changed the model without an edit counted by the Rewriter "
                                 "(its report would say \"changed\": false)");
  if (!changed && counted)
    fail(ExitCode::Findings, label +
                                 " counted edits but the model is unchanged "
                                 "(its report would say \"changed\": true)");
  // Kind by kind: a part that changed needs an edit of one of its kinds counted.
  const ir::PartFingerprints parts = ir::partFingerprints(model);
  for (const auto& rule : partRules()) {
    if (parts.*rule.part == before.parts.*rule.part) continue;
    bool any = false;
    for (auto kind : rule.kinds) any |= counts.*kind > 0;
    if (!any)
      fail(ExitCode::Findings, label + " changed " + rule.what + " without the Rewriter counting an edit of that kind");
  }
  // Node by node: an existing node whose own parts changed must be one the Rewriter counted.
  for (const auto& [n, print] : nodePrints(model)) {
    auto was = before.nodes.find(n);
    if (was == before.nodes.end() || rewriter.counted(n) || was->second == print) continue;
    fail(ExitCode::Findings, label + " edited " + ir::nodeLabel(*n) +
                                 " without the Rewriter counting it (its report's nodes_changed leaves it out)");
  }
  // The report's counts say what the pass did: nodes added or removed by a pass that matched nothing is a lie.
  if (matched == 0 && (counts.nodesAdded || counts.nodesRemoved))
    fail(ExitCode::Findings, label + " added " + std::to_string(counts.nodesAdded) + " and removed " +
                                 std::to_string(counts.nodesRemoved) +
                                 " nodes but says it matched none "
                                 "(its report would say \"matched\": 0)");
}

}  // namespace

nlohmann::json PassManager::run(ir::Model& model) {
  nlohmann::json report = nlohmann::json::array();
  size_t limit = options_.stopAfter.value_or(passes_.size());
  bool verifyEach = options_.verifyEach || verifyEachFromEnvironment();
  for (size_t i = 0; i < passes_.size() && i < limit; ++i) {
    const Pass& pass = *passes_[i];
    ir::Rewriter rewriter(model);
    PassContext context{rewriter};
    Before before;
    // Under --verify-each nodes are compared by address across the pass: none freed in it is reused.
    std::optional<ir::FreedNodeHold> hold;
    if (verifyEach) {
      hold.emplace();
      before = {ir::fingerprint(model), ir::partFingerprints(model), nodePrints(model)};
    }
    auto start = std::chrono::steady_clock::now();
    pass.run(model, context);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto& c = rewriter.counts();
    nlohmann::json entry = {{"pass", pass.name()}, {"index", i}, {"matched", context.matched}};
    nlohmann::json edits = nlohmann::json::object();
    for (const auto& f : ir::ChangeCounts::fields()) (f.summary ? entry : edits)[f.key] = c.*f.count;
    entry["edits"] = std::move(edits);
    entry["changed"] = c.any();
    entry["seconds"] = seconds;
    for (auto& [k, v] : context.details.items()) entry[k] = v;
    report.push_back(std::move(entry));
    spdlog::debug("pass {} ({}): matched {}, +{} -{} ~{} nodes in {:.3f}s", i, pass.name(), context.matched,
                  c.nodesAdded, c.nodesRemoved, c.nodesChanged, seconds);
    const std::string& want = options_.printIrAfter;
    if (!want.empty() && (want == "all" || want == pass.name() || want == std::to_string(i)))
      std::cerr << "graphrw: IR after pass " << i << " (" << pass.name() << "):\n" << printModel(model) << std::flush;
    if (verifyEach) verifyAfter(model, pass, i, before, rewriter, context.matched);
  }
  model.releaseNameTables();  // the passes are done: writing the model needs no fresh names
  return report;
}

}  // namespace graphrw
