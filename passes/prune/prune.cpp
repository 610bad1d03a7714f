#include "passes/prune/prune.h"

#include <set>

#include "analysis/opsets.h"

namespace graphrw::passes {
namespace {

using namespace ir;

// Domains the nodes of g (and its subgraphs) use; "" for ai.onnx.
void collectDomains(const Graph& g, std::set<std::string>& domains) {
  g.walkGraphs([&](const Graph& sub) {
    for (const auto& n : sub.nodes()) domains.insert(isDefaultDomain(n->domain()) ? "" : n->domain());
  });
}

// The imports of `imports` whose domain is not in `used` (ai.onnx is kept).
std::vector<std::string> unusedImports(const std::map<std::string, int64_t>& imports,
                                       const std::set<std::string>& used) {
  std::vector<std::string> out;
  for (const auto& [domain, _] : imports)
    if (!isDefaultDomain(domain) && !used.count(domain)) out.push_back(domain);
  return out;
}

class PrunePass final : public Pass {
 public:
  explicit PrunePass(PruneOptions options) : options_(options) {}
  std::string name() const override { return kPrunePass; }

  void run(Model& model, PassContext& context) const override {
    Rewriter& rw = context.rewriter;
    nlohmann::json functions = nlohmann::json::array(), imports = nlohmann::json::array();
    size_t initializers = 0, valueInfo = 0;

    if (options_.functions) {
      auto usage = ModelUsage::of(model);  // functions reachable by calls from the main graph
      std::vector<const Function*> unreachable;
      for (const auto& f : model.functions())
        if (!usage.reachable.count(f->key())) unreachable.push_back(f.get());
      for (const Function* f : unreachable) {
        functions.push_back(f->key().str());
        rw.removeFunction(f);
      }
    }
    if (options_.initializers) {
      model.graph().walkGraphs([&](Graph& g) {
        std::vector<Value*> unused;
        for (const auto& init : g.initializers())
          if (init.value->uses().empty() && !init.value->isGraphInput() && init.value->graphOutputCount() == 0)
            unused.push_back(init.value);
        for (Value* v : unused) rw.eraseInitializer(v);
        initializers += unused.size();
      });
    }
    if (options_.valueInfo) {
      model.walkGraphs([&](Graph& g) {
        std::vector<Value*> undefined;
        for (const auto& vi : g.valueInfo()) {
          const Value* v = vi.value;
          if (!v->producer() && !v->isGraphInput() && !v->isInitializer() && !v->isSparseInitializer())
            undefined.push_back(vi.value);
        }
        for (Value* v : undefined) valueInfo += rw.removeValueInfo(g, v);
      });
    }
    if (options_.opsetImports) {
      // The model's imports serve the main graph and, for runtimes that resolve
      // calls inside bodies with them, every function body too.
      std::set<std::string> used;
      collectDomains(model.graph(), used);
      for (const auto& f : model.functions()) {
        std::set<std::string> own;
        collectDomains(f->body(), own);
        for (const auto& d : unusedImports(f->opsetImports(), own)) {
          rw.removeOpsetImport(f->body(), d);
          imports.push_back(f->key().str() + ": " + d);
        }
        used.insert(own.begin(), own.end());
      }
      for (const auto& d : unusedImports(model.opsetImports(), used)) {
        rw.removeOpsetImport(model.graph(), d);
        imports.push_back(d);
      }
    }
    context.matched = functions.size() + initializers + valueInfo + imports.size();
    context.details["functions_removed"] = functions;
    context.details["initializers_removed"] = initializers;
    context.details["value_info_removed"] = valueInfo;
    context.details["opset_imports_removed"] = imports;
  }

 private:
  const PruneOptions options_;
};

PruneOptions pruneOptionsFromJson(const nlohmann::json& j) {
  PruneOptions o;
  o.initializers = j.at("initializers").get<bool>();
  o.functions = j.at("functions").get<bool>();
  o.valueInfo = j.at("value_info").get<bool>();
  o.opsetImports = j.at("opset_imports").get<bool>();
  return o;
}

using Kind = OptionSpec::Kind;

const RegisterPass registration{PassSpec{
    .name = kPrunePass,
    .summary = "Drop unused initializers, unreachable local functions, stray value_info and unused opset imports",
    .description = "Drop what nothing uses: initializers no node reads, local functions no call reaches, value_info "
                   "of values nothing defines, imports of domains no node uses (ai.onnx stays).",
    .outputTag = "pruned",
    .options =
        {
            {.key = "initializers",
             .flags = "--keep-initializers",
             .kind = Kind::NoFlag,
             .help = "Remove initializers no node reads (--keep-initializers: keep them)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "functions",
             .flags = "--keep-functions",
             .kind = Kind::NoFlag,
             .help = "Remove local functions no call from the main graph reaches (--keep-functions: keep them)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "value_info",
             .flags = "--keep-value-info",
             .kind = Kind::NoFlag,
             .help = "Remove value_info entries of values nothing defines (--keep-value-info: keep them)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "opset_imports",
             .flags = "--keep-opset-imports",
             .kind = Kind::NoFlag,
             .help = "Remove imports of domains no node uses, in the model and in each function "
                     "(--keep-opset-imports: keep them)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
        },
    .examples =
        {
            "graphrw prune model.onnx",
            "graphrw prune model.onnx --keep-functions -o - | graphrw inspect -",
        },
    .create = [](const nlohmann::json& entry, const RuleContext&,
                 const std::string&) { return createPrunePass(pruneOptionsFromJson(entry)); },
}};

}  // namespace

std::unique_ptr<Pass> createPrunePass(PruneOptions options) { return std::make_unique<PrunePass>(options); }

}  // namespace graphrw::passes
