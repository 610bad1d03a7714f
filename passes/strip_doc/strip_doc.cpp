#include "passes/strip_doc/strip_doc.h"

namespace graphrw::passes {
namespace {

using namespace ir;

class StripDocPass final : public Pass {
 public:
  explicit StripDocPass(StripDocOptions options) : options_(options) {}
  std::string name() const override { return kStripDocPass; }

  void run(Model& model, PassContext& context) const override {
    Rewriter& rw = context.rewriter;
    size_t nodes = 0, graphs = 0, functions = 0, modelDoc = 0;
    // Every graph: the main graph, subgraphs, function bodies and theirs.
    model.walkGraphs([&](Graph& g) {
      if (options_.graphs && g.residual().has_doc_string()) {
        rw.setDocString(g, "");
        ++graphs;
      }
      if (!options_.nodes) return;
      for (const auto& n : g.nodes())
        if (n->residual().has_doc_string()) {
          rw.setDocString(n.get(), "");
          ++nodes;
        }
    });
    if (options_.functions)
      for (const auto& f : model.functions())
        if (f->residual().has_doc_string()) {
          rw.setDocString(f.get(), "");
          ++functions;
        }
    if (options_.model && model.residual().has_doc_string()) {
      rw.setModelDocString("");
      ++modelDoc;
    }
    context.matched = nodes + graphs + functions + modelDoc;
    context.details["doc_strings_removed"] = {
        {"nodes", nodes}, {"graphs", graphs}, {"functions", functions}, {"model", modelDoc}};
  }

 private:
  const StripDocOptions options_;
};

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = kStripDocPass,
    .summary = "Remove doc strings from nodes, graphs, local functions and the model",
    .description = "Remove doc strings (exporters' notes, stack traces) from nodes, graphs (subgraphs and function "
                   "bodies included), local functions and the model. Names, shapes and the maths stay as they are.",
    .outputTag = "stripped",
    .options =
        {
            {.key = "nodes",
             .flags = "--keep-nodes",
             .kind = Kind::NoFlag,
             .help = "Remove the doc strings of nodes (--keep-nodes: keep them)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "graphs",
             .flags = "--keep-graphs",
             .kind = Kind::NoFlag,
             .help = "Remove the doc strings of graphs (--keep-graphs: keep them)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "functions",
             .flags = "--keep-functions",
             .kind = Kind::NoFlag,
             .help = "Remove the doc strings of local functions (--keep-functions: keep them)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "model",
             .flags = "--keep-model",
             .kind = Kind::NoFlag,
             .help = "Remove the model's doc string (--keep-model: keep it)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
        },
    .examples =
        {
            "graphrw strip-doc model.onnx",
            "graphrw strip-doc model.onnx --keep-model -o - | graphrw inspect -",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext&, const std::string&) {
          StripDocOptions o;
          o.nodes = entry.at("nodes").get<bool>();
          o.graphs = entry.at("graphs").get<bool>();
          o.functions = entry.at("functions").get<bool>();
          o.model = entry.at("model").get<bool>();
          return createStripDocPass(o);
        },
}};

}  // namespace

std::unique_ptr<Pass> createStripDocPass(StripDocOptions options) { return std::make_unique<StripDocPass>(options); }

}  // namespace graphrw::passes
