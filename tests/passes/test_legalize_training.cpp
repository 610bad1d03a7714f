// legalize --mode training (the default): PyTorch training exports
// (tests/models/pytorch/export_training.py) keep every parameter by name and
// bytes, their ties and their Dropouts, and compute what they computed; and
// the pieces it is made of: fold/replace --keep-parameters, opset --training.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <set>

#include "driver/pass_manager.h"
#include "driver/rules.h"
#include "fold/fold.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "ir/rewriter.h"
#include "passes/fold/fold.h"
#include "passes/opset/opset.h"
#include "passes/popart/legalize/legalize.h"
#include "passes/popart/legalize/legalize_training.h"
#include "support.h"
#include "support/error.h"
#include "target/popart/check.h"

namespace fs = std::filesystem;
using namespace graphrw;
using namespace graphrw::test;

namespace {

fs::path pytorchDir() { return fs::path(GRAPHRW_SOURCE_DIR) / "tests" / "models" / "pytorch"; }

std::map<std::string, const onnx::TensorProto*> initializers(const onnx::ModelProto& m) {
  std::map<std::string, const onnx::TensorProto*> out;
  for (const auto& t : m.graph().initializer()) out[t.name()] = &t;
  return out;
}

std::string bytesOf(const onnx::TensorProto& t) { return readTensor(ir::Tensor(t)).data; }

// Each Dropout becomes an Identity of its data input (main graph and function
// bodies): the outputs no longer depend on the random mask, in both models.
void dropoutOff(onnx::ModelProto& m) {
  auto off = [](onnx::NodeProto& n) {
    if (n.op_type() != "Dropout") return;
    n.set_op_type("Identity");
    n.mutable_input()->DeleteSubrange(1, n.input_size() - 1);
    n.mutable_output()->DeleteSubrange(1, n.output_size() - 1);
    n.clear_attribute();
  };
  for (auto& n : *m.mutable_graph()->mutable_node()) off(n);
  for (auto& f : *m.mutable_functions())
    for (auto& n : *f.mutable_node()) off(n);
}

// The ratio of every Dropout in the main graph and function bodies (opset 12+: its constant input).
std::multiset<float> dropoutRatios(const onnx::ModelProto& m, bool attribute) {
  std::multiset<float> out;
  auto look = [&](const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
    std::map<std::string, float> constants;
    for (const auto& n : nodes) {
      if (n.op_type() == "Constant" && n.attribute_size() == 1 && n.attribute(0).has_t()) {
        HostTensor t = readTensor(ir::Tensor(n.attribute(0).t()));
        if (t.type == onnx::TensorProto::FLOAT && t.count() == 1) {
          float f;
          std::memcpy(&f, t.data.data(), 4);
          constants[n.output(0)] = f;
        }
      }
      if (n.op_type() != "Dropout") continue;
      if (attribute) {
        for (const auto& a : n.attribute())
          if (a.name() == "ratio") out.insert(a.f());
      } else if (n.input_size() > 1 && constants.count(n.input(1))) {
        out.insert(constants[n.input(1)]);
      }
    }
  };
  look(m.graph().node());
  for (const auto& f : m.functions()) look(f.node());
  return out;
}

}  // namespace

TEST_CASE("legalize training: PyTorch training exports keep every parameter, the tie and each Dropout, and the maths",
          "[legalize][popart][pytorch][training]") {
  struct Case {
    std::string model, rules, tied;
  };
  std::string bertRules = (fs::path(GRAPHRW_SOURCE_DIR) / "examples" / "popart-training.rules.json").string();
  std::vector<Case> cases = {
      {"bert-mlm-train-opset15", bertRules, "bert.embeddings.word_embeddings.weight"},
      {"bert-mlm-train-opset17", bertRules, "bert.embeddings.word_embeddings.weight"},
      {"bert-mlm-train-functions-opset17", bertRules, "bert.embeddings.word_embeddings.weight"},
      {"gpt-train-opset15", "", "gpt.words.weight"},
  };
  for (const auto& c : cases) {
    INFO(c.model);
    fs::path path = pytorchDir() / (c.model + ".onnx");
    REQUIRE(fs::exists(path));
    auto original = readProto(path);
    auto model = loadModel(path.string());
    PassManager pm({true, std::nullopt, ""});
    if (c.rules.empty())
      pm.add(passes::createLegalizePass({}));
    else
      for (auto& p : loadRules(c.rules).passes) pm.add(p);
    nlohmann::json report = pm.run(*model);
    INFO(report.dump());
    const auto& passes = report.is_array() ? report : report["passes"];
    CHECK(passes[0]["mode"] == "training");
    CHECK(passes[0]["parameters_kept"]["count"] == original.graph().initializer_size());
    CHECK(popart::checkImport(*model).empty());
    checkValid(*model);
    onnx::ModelProto written = toProto(*model);

    // Every parameter by name with its bytes; no new float initializer.
    auto before = initializers(original), after = initializers(written);
    REQUIRE(before.size() > 30);
    for (const auto& [name, t] : before) {
      INFO(name);
      REQUIRE(after.count(name));
      CHECK(after[name]->data_type() == t->data_type());
      CHECK(bytesOf(*after[name]) == bytesOf(*t));
    }
    for (const auto& [name, t] : after) {
      INFO(name);
      CHECK((before.count(name) || t->data_type() != onnx::TensorProto::FLOAT));
    }
    // The tie is one tensor read at both ends: the embedding's Gather and the head.
    std::set<std::string> readers;
    for (const auto& n : written.graph().node())
      for (const auto& i : n.input())
        if (i == c.tied) readers.insert(n.op_type());
    CHECK(readers == std::set<std::string>{"Gather", "Transpose"});
    // Each Dropout keeps its ratio, now an attribute (Dropout 10).
    auto ratios = dropoutRatios(original, false);
    CHECK(ratios.size() >= 4);
    // (With functions the original counts each body once, the output each inlined call.)
    auto written_ratios = dropoutRatios(written, true);
    if (original.functions_size() == 0)
      CHECK(written_ratios == ratios);
    else
      CHECK(std::set<float>(written_ratios.begin(), written_ratios.end()) ==
            std::set<float>(ratios.begin(), ratios.end()));
    CHECK(written_ratios.size() >= ratios.size());

    // The maths, with Dropout switched off in both.
    dropoutOff(original);
    onnx::ModelProto mapped = mapBack(*model);
    dropoutOff(mapped);
    checkSameMaths(original, mapped, 1e-4, 40);
  }
}

TEST_CASE("legalize training: BatchNormalization keeps its training form, Dropout of ratio 0 goes",
          "[legalize][popart][training]") {
  fs::path path = pytorchDir() / "resnet-train-opset15.onnx";
  auto original = readProto(path);
  auto model = loadModel(path.string());
  PassManager pm({true, std::nullopt, ""});
  pm.add(passes::createLegalizePass({}));
  pm.run(*model);
  onnx::ModelProto written = toProto(*model);
  size_t batchNorms = 0;
  for (const auto& n : written.graph().node()) {
    if (n.op_type() != "BatchNormalization") continue;
    batchNorms++;
    INFO(n.name());
    // PopART trains a BatchNormalization with five outputs (op/batchnorm.cpp:64), and
    // updates the running statistics (inputs 3 and 4, parameters) from outputs 1 and 2.
    CHECK(n.output_size() == 5);
    CHECK(n.input(3).ends_with("running_mean"));
    CHECK(n.input(4).ends_with("running_var"));
    for (const auto& a : n.attribute()) CHECK(a.name() != "training_mode");
  }
  CHECK(batchNorms == 5);
  CHECK(initializers(written).size() == static_cast<size_t>(original.graph().initializer_size()));
  checkSameMaths(original, written, 1e-4);

  // A Dropout that drops nothing (ratio 0, or training_mode false) is removed; one with ratio 0.2 stays.
  auto dropouts = parseModel(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2, 4] x) => (float[2, 4] y) {
  zero = Constant <value = float {0.0}> ()
  some = Constant <value = float {0.2}> ()
  yes = Constant <value = bool {1}> ()
  no = Constant <value = bool {0}> ()
  a, ma = Dropout (x, zero, yes)
  b = Dropout (a, some, no)
  y = Dropout (b, some, yes)
}
)");
  nlohmann::json report;
  auto legal = runPass(dropouts, passes::createLegalizePass({}), &report);
  INFO(report.dump());
  CHECK(report["steps"]["dropout_identity_removed"] == 2);
  auto out = toProto(*legal);
  REQUIRE(countOp(out, "Dropout") == 1);
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Dropout") {
      CHECK(n.input_size() == 1);
      CHECK(n.output_size() == 1);  // the mask nothing reads is gone
      REQUIRE(n.attribute_size() == 1);
      CHECK(n.attribute(0).name() == "ratio");
      CHECK(n.attribute(0).f() == Approx(0.2f));
    }
}

TEST_CASE("legalize inference: every Dropout goes, a training-mode one too, unless a graph input sets training_mode",
          "[legalize][popart]") {
  auto dropouts = parseModel(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2, 4] x) => (float[2, 4] y) {
  some = Constant <value = float {0.2}> ()
  yes = Constant <value = bool {1}> ()
  a = Dropout (x, some, yes)
  b = Dropout (a, some)
  y = Relu (b)
}
)");
  passes::LegalizeOptions inference;
  inference.mode = "inference";
  nlohmann::json report;
  auto legal = runPass(dropouts, passes::createLegalizePass(inference), &report);
  INFO(report.dump());
  CHECK(report["steps"]["dropout_identity_removed"] == 2);
  CHECK(countOp(toProto(*legal), "Dropout") == 0);
  // In training mode the training-mode Dropout stays (as Dropout-10 for PopART).
  auto training = runPass(dropouts, passes::createLegalizePass({}), &report);
  CHECK(countOp(toProto(*training), "Dropout") == 1);
  // A training_mode the user feeds is theirs: kept, and opset 11 has no form for it.
  auto fed = parseModel(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2, 4] x, bool train) => (float[2, 4] y) {
  some = Constant <value = float {0.2}> ()
  y = Dropout (x, some, train)
}
)");
  CHECK_THROWS_WITH(
      runPass(fed, passes::createLegalizePass(inference), &report),
      Catch::Contains("the node producing 'y' (ai.onnx::Dropout): training_mode 'train' is not a constant"));
}

TEST_CASE("legalize training: a Dropout ratio held in an initializer becomes the attribute, no defect reported",
          "[legalize][popart][training]") {
  // The ratio and training_mode as initializers (not Constant nodes): they were
  // counted as parameters, and their going was reported as a graphrw defect (exit 70).
  auto model = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 4] x) => (float[2, 4] y) <float r = {0.1}, bool t = {1}, float[4] w = {1.0, 2.0, 3.0, 4.0}> {
  d = Dropout (x, r, t)
  y = Mul (d, w)
}
)");
  nlohmann::json report;
  auto legal = runPass(model, passes::createLegalizePass({}), &report);
  INFO(report.dump());
  CHECK(report["parameters_kept"]["count"] == 1);  // w
  auto out = toProto(*legal);
  REQUIRE(countOp(out, "Dropout") == 1);
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Dropout") {
      REQUIRE(n.attribute_size() == 1);
      CHECK(n.attribute(0).f() == Approx(0.1f));
    }
}

TEST_CASE("legalize training: the parameter check compares weights as views of the input, and still sees a changed one",
          "[legalize][training]") {
  // w in raw_data, large enough to be held as a view of the mapped input.
  std::string values;
  for (int i = 0; i < 64; ++i) values += (i ? ", " : "") + std::to_string(i) + ".5";
  auto proto = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[64] x) => (float[64] y) <float[64] w = {)" +
                          values + R"(}> {
  y = Mul (x, w)
}
)");
  auto* w = proto.mutable_graph()->mutable_initializer(0);  // as exporters write weights: raw_data
  std::string raw(static_cast<size_t>(w->float_data_size()) * 4, '\0');
  std::memcpy(raw.data(), w->float_data().data(), raw.size());
  w->clear_float_data();
  w->set_raw_data(raw);
  graphrw::test::TempDir dir;
  writeProto(proto, dir / "m.onnx");
  auto model = loadModel((dir / "m.onnx").string());
  ir::Graph& g = model->graph();
  REQUIRE(g.findLocal("w")->initializer()->rawView());
  auto snapshot = passes::legalize_detail::ParameterSnapshot::of(*model);
  CHECK(snapshot.check(*model)["count"] == 1);

  // w replaced by a tensor of the same name and shape: equal bytes pass, other bytes are a defect.
  const onnx::TensorProto metadata = g.findLocal("w")->initializer()->proto();
  const std::string original(g.findLocal("w")->initializer()->rawView()->view());
  auto replaceW = [&](float first) {
    ir::Rewriter rw(*model);
    ir::Value* old = g.findLocal("w");
    onnx::TensorProto t = metadata;  // a replacement holds its bytes in raw_data, not as a view
    std::string bytes = original;
    std::memcpy(bytes.data(), &first, 4);
    t.set_raw_data(bytes);
    ir::Value* tmp = rw.addInitializer(g, "tmp", std::make_unique<ir::Tensor>(t));
    rw.replaceAllUsesWith(old, tmp);
    rw.eraseInitializer(old);
    ir::Value* fresh = rw.addInitializer(g, "w", std::make_unique<ir::Tensor>(t));
    REQUIRE(fresh->name() == "w");
    rw.replaceAllUsesWith(tmp, fresh);
    rw.eraseInitializer(tmp);
  };
  replaceW(0.5f);  // the same values, in another buffer
  CHECK(snapshot.check(*model)["count"] == 1);
  replaceW(7.0f);
  CHECK_THROWS_WITH(snapshot.check(*model), Catch::Contains("legalize: parameter 'w' changed its values"));
}

TEST_CASE("opset --training: Dropout 12 and BatchNormalization 14 keep training below their opsets",
          "[opset][training]") {
  auto model = parseModel(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2, 3, 4] x, float r) => (float[2, 3, 4] y, bool[2, 3, 4] m, float[3] rm) <float[3] s = {1.0, 2.0, 3.0},
    float[3] b = {0.0, 0.5, 1.0}, float[3] mean = {0.0, 0.0, 0.0}, float[3] var = {1.0, 1.0, 1.0}> {
  ratio = Constant <value = float {0.3}> ()
  yes = Constant <value = bool {1}> ()
  d, m = Dropout (x, ratio, yes)
  y, rm, rv = BatchNormalization <training_mode = 1, momentum = 0.9> (d, s, b, mean, var)
}
)");
  passes::OpsetOptions o;
  o.to = 11;
  // Without --training both are refused, each naming why.
  try {
    runPass(model, passes::createOpsetPass(o));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("training-mode Dropout has no form before opset 12 outside training") &&
                             Catch::Contains("training_mode is 1: no form before opset 14 outside training"));
  }
  o.training = true;
  auto out = toProto(*runPass(model, passes::createOpsetPass(o)));
  for (const auto& n : out.graph().node()) {
    if (n.op_type() == "Dropout") {
      CHECK(n.input_size() == 1);
      CHECK(n.output_size() == 2);  // the mask is a graph output: kept
      REQUIRE(n.attribute_size() == 1);
      CHECK(n.attribute(0).f() == Approx(0.3f));
    }
    if (n.op_type() == "BatchNormalization") {
      CHECK(n.output_size() == 5);
      CHECK(n.output(1) == "rm");  // the running mean the graph returns is output 1 still
      CHECK(n.attribute_size() == 1);  // momentum; training_mode gone
    }
  }
  // A ratio that is not a constant cannot become Dropout 10's attribute.
  auto dynamicRatio = parseModel(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2] x, float r) => (float[2] y) {
  yes = Constant <value = bool {1}> ()
  y = Dropout (x, r, yes)
}
)");
  try {
    runPass(dynamicRatio, passes::createOpsetPass(o));
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("ratio 'r' is not a constant float"));
  }
}

TEST_CASE("fold --keep-parameters: ops on initializers stay, other constants fold into Constant nodes",
          "[fold][training]") {
  auto model = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 2] y) <float[2, 3] w = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}> {
  wt = Transpose (w)
  two = Constant <value = int64[1] {2}> ()
  one = Constant <value = int64[1] {-1}> ()
  shape = Concat <axis = 0> (two, one)
  xr = Reshape (x, shape)
  y = MatMul (xr, wt)
}
)");
  passes::FoldOptions o;
  o.keepParameters = true;
  auto out = toProto(*runPass(model, passes::createFoldPass(o)));
  CHECK(countOp(out, "Transpose") == 1);  // Transpose(w) is an op on a parameter
  CHECK(countOp(out, "Concat") == 0);  // the shape folded ...
  CHECK(countOp(out, "Constant") == 1);  // ... into one Constant node
  REQUIRE(out.graph().initializer_size() == 1);
  CHECK(out.graph().initializer(0).name() == "w");
  checkSameMaths(model, out);
  // Without it, both fold into initializers.
  auto folded = toProto(*runPass(model, passes::createFoldPass({})));
  CHECK(countOp(folded, "Transpose") == 0);
  CHECK(folded.graph().initializer_size() == 2);
}

TEST_CASE("opset: a training-mode Dropout of ratio 0 (torchvision's Swin) becomes an Identity at any opset",
          "[opset][training]") {
  auto model = parseModel(R"(
<ir_version: 8, opset_import: ["" : 15]>
g (float[2, 4] x) => (float[2, 4] y) {
  zero = Constant <value = float {0.0}> ()
  yes = Constant <value = bool {1}> ()
  y, mask = Dropout (x, zero, yes)
}
)");
  passes::OpsetOptions o;
  o.to = 11;
  auto out = toProto(*runPass(model, passes::createOpsetPass(o)));
  CHECK(countOp(out, "Dropout") == 0);
  CHECK(countOp(out, "Identity") == 1);
  checkSameMaths(model, out);
}
