// place's registration: its options, the flags that set them and the factory
// from a rule file's entry; the pass itself is in place.cpp, --auto's search in
// place_auto.cpp.
#include <charconv>

#include "passes/popart/place/place.h"
#include "passes/popart/place/place_auto.h"
#include "support/error.h"
#include "target/popart/stage_cost.h"

namespace graphrw::passes {
namespace {

using Kind = OptionSpec::Kind;

// --stage 'SEL|SEL' (repeatable, one per stage) -> [[{...}, {...}], ...]
nlohmann::json stagesFromFlags(const std::vector<std::string>& values) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& text : values) stages.push_back(selectorsFromFlag(text));
  return stages;
}

nlohmann::json ipusFromFlags(const std::vector<std::string>& values) {
  nlohmann::json ipus = nlohmann::json::array();
  for (const auto& t : values) {
    if (t.empty()) continue;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc::result_out_of_range) usageError("--ipus '" + t + "': too large for a 64-bit integer");
    if (ec != std::errc() || end != t.data() + t.size() || v < 0)
      usageError("--ipus '" + t + "': expected IPU numbers, e.g. 0,1,1,2");
    ipus.push_back(v);
  }
  return ipus;
}

const RegisterPass registration{PassSpec{
    .name = kPlacePass,
    .summary = "Pipeline stages and IPUs by selectors; other nodes follow their data (__pipeline_stage, __ipu_number)",
    .description = "Pipeline stages by selectors (the seed's pipeline_stages and pipeline_device_mapping): stage i "
                   "holds the nodes its selectors match, every other node follows its data; writes __pipeline_stage "
                   "and __ipu_number (INT) on every op, Calls' callees included.",
    .outputTag = "placed",
    .options =
        {
            {.key = "stages",
             .flags = "--stage",
             .kind = Kind::Selectors,
             .help = "Stage i: a selector or a list of selectors (any of which may match); on the command line one "
                     "--stage per stage, in order, alternatives separated by '|'",
             .schema = {{"type", "array"},
                        {"minItems", 1},
                        {"items", {{"$ref", "../rules.schema.json#/$defs/selectors"}}}},
             .convert = stagesFromFlags},
            {.key = "ipus",
             .flags = "--ipus",
             .kind = Kind::List,
             .help = "The IPU of each stage (default: stage i on IPU i); without stages, one IPU for every op",
             // The largest IPU-POD systems hold 1024 IPUs; more is a typo, not a machine.
             .schema = {{"type", "array"},
                        {"minItems", 1},
                        {"items", {{"type", "integer"}, {"minimum", 0}, {"maximum", 1023}}}},
             .convert = ipusFromFlags},
            {.key = "pipeline",
             .flags = "--no-pipeline",
             .kind = Kind::NoFlag,
             .help = "Write __pipeline_stage (--no-pipeline: only __ipu_number, for sharding)",
             .schema = {{"type", "boolean"}},
             .defaultValue = true},
            {.key = "allow_no_match",
             .flags = "--allow-no-match",
             .kind = Kind::Flag,
             .help = "A stage whose selectors match nothing is a warning, not an error",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
            {.key = "untie",
             .flags = "--untie",
             .kind = Kind::Flag,
             .help = "First give each parameter PyTorch merged for having an equal value (an Identity of an "
                     "initializer, named after the parameter) its own initializer under that name; a real tie "
                     "(one tensor read twice) stays",
             .schema = {{"type", "boolean"}},
             .defaultValue = false},
            {.key = "auto",
             .flags = "--auto",
             .kind = Kind::Integer,
             .help = "N pipeline stages from the stage cost model (docs/popart.md, \"Automatic stages\"): contiguous "
                     "along the layers, the slowest stage as fast as can be and every IPU within --ipu-memory; "
                     "--stage i and --pin pin nodes to their stage",
             .schema = {{"type", "integer"}, {"minimum", 1}, {"maximum", 1024}}},
            {.key = "pin",
             .flags = "--pin",
             .kind = Kind::Selectors,
             .help = "With --auto: STAGE=SEL puts the nodes SEL matches into STAGE (negative from the end: -1 is "
                     "the last stage); alternatives separated by '|'",
             .schema = {{"type", "array"},
                        {"minItems", 1},
                        {"items",
                         {{"type", "object"},
                          {"required", {"stage", "select"}},
                          {"additionalProperties", false},
                          {"properties",
                           {{"stage", {{"type", "integer"}, {"minimum", -1024}, {"maximum", 1023}}},
                            {"select", {{"$ref", "../rules.schema.json#/$defs/selectors"}}}}}}}},
             .convert = pinsFromFlags},
            {.key = "ipu_memory",
             .flags = "--ipu-memory",
             .kind = Kind::String,
             .help = "With --auto: the memory of one IPU (900MiB, 1.5GB, bytes; default 900MiB, a Mk2 IPU)",
             .schema = {{"type", "string"}, {"minLength", 1}}},
            {.key = "optimizer",
             .flags = "--optimizer",
             .kind = Kind::String,
             .help = "With --auto: training with this optimizer (its state per weight counts), or none (inference, "
                     "the default)",
             .schema = {{"type", "string"}, {"enum", {"none", "sgd", "momentum", "adam", "lamb"}}}},
            {.key = "balance",
             .flags = "--balance",
             .kind = Kind::String,
             .help = "With --auto: what the stages even out, every IPU within its memory: compute (the default: the "
                     "slowest stage's FLOPs), memory (the fullest IPU) or both (each stage's FLOPs and memory "
                     "against an even share)",
             .schema = {{"type", "string"}, {"enum", {"compute", "memory", "both"}}}},
            {.key = "batch",
             .flags = "--batch",
             .kind = Kind::Integer,
             .help = "With --auto: the micro-batch size to cost (default: the model's); activations and FLOPs that "
                     "depend on the inputs scale with it, a symbolic batch dimension is set to it",
             .schema = {{"type", "integer"}, {"minimum", 1}, {"maximum", 1 << 20}}},
            {.key = "costs",
             .flags = "--costs",
             .kind = Kind::String,
             .help = "With --auto: a calibration of the cost model (docs/popart.md, \"Calibrating the cost model\"): "
                     "a JSON file of {\"reserve\": SIZE, \"ops\": {OP: {\"flops_scale\", \"flops_per_element\", "
                     "\"activation_scale\"}}}, or in a rule file that object itself",
             .schema = {{"oneOf", {{{"type", "string"}, {"minLength", 1}}, stage_cost::calibrationSchema()}}}},
        },
    .examples =
        {
            "graphrw place bert.onnx --stage 'scope=/embeddings/|scope=/encoder/layer.0/' --stage "
            "'scope=/encoder/layer.1/' --ipus 0,1",
            "graphrw place model.onnx --ipus 0",
            "graphrw place bert.onnx --auto 4 --optimizer adam --untie --stage 'scope=/embeddings/'",
            "graphrw place bert.onnx --auto 5 --ipus 0,1,2,3,0 --pin '0=scope=/embeddings/' --pin '-1=scope=/cls/'",
        },
    .create =
        [](const nlohmann::json& entry, const RuleContext& where, const std::string& pointer) {
          PlaceOptions o;
          auto at = [&](const std::string& p) { return where.at(p); };
          if (entry.contains("stages"))
            for (size_t i = 0; i < entry["stages"].size(); ++i)
              o.stages.push_back(
                  SelectorSet::fromJson(entry["stages"][i], at, pointer + "/stages/" + std::to_string(i)));
          if (entry.contains("ipus")) o.ipus = entry["ipus"].get<std::vector<int64_t>>();
          o.pipeline = entry.at("pipeline").get<bool>();
          o.allowNoMatch = entry.at("allow_no_match").get<bool>();
          o.untie = entry.at("untie").get<bool>();
          if (entry.contains("auto")) {
            o.autoPlace = autoPlaceOptions(entry, o.stages, o.ipus, o.allowNoMatch, at, pointer, where.baseDir());
            return createPlacePass(std::move(o));
          }
          for (const char* key : {"pin", "ipu_memory", "optimizer", "balance", "batch", "costs"})
            if (entry.contains(key)) usageError(where.at(pointer + "/" + key) + ": goes with auto (--auto N)");
          if (o.stages.empty() && o.ipus.size() > 1)
            usageError(where.at(pointer + "/ipus") + ": without stages, give one IPU (every op goes there)");
          if (o.stages.empty() && o.ipus.empty())
            usageError(where.at(pointer) + ": place needs stages (--stage) or one IPU (--ipus)");
          if (!o.stages.empty() && !o.ipus.empty() && o.ipus.size() != o.stages.size())
            usageError(where.at(pointer + "/ipus") + ": " + std::to_string(o.ipus.size()) + " IPUs for " +
                       std::to_string(o.stages.size()) + " stages");
          return createPlacePass(std::move(o));
        },
}};

}  // namespace
}  // namespace graphrw::passes
