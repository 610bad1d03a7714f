// What a PopART session refuses after import (target/popart/session.h): for
// each finding class, a model PopART imports cleanly that triggers that
// finding alone, and the same model without it.
#include <catch2/catch.hpp>

#include "io/loader.h"
#include "ort.h"
#include "support.h"
#include "target/popart/check.h"
#include "target/popart/session.h"

using namespace graphrw;

namespace {

std::vector<std::string> classes(const std::string& text, bool training = false) {
  auto m = loadModel(test::parseModel(text));
  INFO("import findings must be none");
  REQUIRE(popart::checkImport(*m).empty());
  std::vector<std::string> out;
  for (const auto& f : popart::checkSession(*m, {training})) out.push_back(f.check + " @ " + f.where);
  return out;
}

std::string model(const std::string& inputs, const std::string& inits, const std::string& body) {
  return "<ir_version: 6, opset_import: [\"\" : 11]>\nmain (" + inputs + ") => (float[2,3] Y)" +
         (inits.empty() ? "" : " <" + inits + ">") + " {\n" + body + "\n}\n";
}

}  // namespace

TEST_CASE("popart session: BatchNormalization on a rank-2 input", "[popart]") {
  const char* stats = "float[3] s = {1,1,1}, float[3] b = {0,0,0}, float[3] mu = {0,0,0}, float[3] v = {1,1,1}";
  CHECK(classes(model("float[2,3] X", stats, "  Y = BatchNormalization(X, s, b, mu, v)")) ==
        std::vector<std::string>{"batchnorm-rank @ the node producing 'Y' (ai.onnx::BatchNormalization)"});
  CHECK(classes(model("float[2,3,1] X", stats,
                      "  Z = BatchNormalization(X, s, b, mu, v)\n  sh = Constant <value = int64[2] {2, 3}> ()\n"
                      "  Y = Reshape(Z, sh)"))
            .empty());
}

TEST_CASE("popart session: MaxPool storage_order and AveragePool count_include_pad", "[popart]") {
  auto pool = [](const std::string& op) {
    return "<ir_version: 6, opset_import: [\"\" : 11]>\nmain (float[1,1,4,4] X) => (float[1,1,2,2] Y) {\n  Y = " + op +
           "(X)\n}\n";
  };
  CHECK(classes(pool("MaxPool <kernel_shape = [2, 2], strides = [2, 2], storage_order = 1>")) ==
        std::vector<std::string>{"maxpool-storage-order @ the node producing 'Y' (ai.onnx::MaxPool)"});
  CHECK(classes(pool("MaxPool <kernel_shape = [2, 2], strides = [2, 2]>")).empty());
  CHECK(classes(pool("AveragePool <kernel_shape = [2, 2], strides = [2, 2], count_include_pad = 1>")) ==
        std::vector<std::string>{"averagepool-count-include-pad @ the node producing 'Y' (ai.onnx::AveragePool)"});
  CHECK(classes(pool("AveragePool <kernel_shape = [2, 2], strides = [2, 2]>")).empty());
}

TEST_CASE("popart session: an integer initializer only in training", "[popart]") {
  const char* text = R"(
<ir_version: 6, opset_import: ["" : 11]>
main (float[2,3] X) => (float[2,3] Y) <int64[2] ids = {0, 1}, float[4,3] table = {0,0,0, 1,1,1, 2,2,2, 3,3,3}> {
  T = Gather <axis = 0> (table, ids)
  Y = Add(X, T)
}
)";
  CHECK(classes(text, false).empty());
  CHECK(classes(text, true) == std::vector<std::string>{"training-integer-variable @ initializer 'ids'"});
  CHECK(popart::sessionFindingClasses().size() == 7);
}

TEST_CASE("popart session: pipeline stages on one IPU", "[popart]") {
  auto placed = [](int ipu0, int ipu1) {
    return "<ir_version: 6, opset_import: [\"\" : 11]>\nmain (float[2,3] X) => (float[2,3] Y) {\n"
           "  A = Relu <__pipeline_stage: int = 0, __ipu_number: int = " +
           std::to_string(ipu0) +
           "> (X)\n"
           "  Y = Sigmoid <__pipeline_stage: int = 1, __ipu_number: int = " +
           std::to_string(ipu1) + "> (A)\n}\n";
  };
  CHECK(classes(placed(0, 0)) == std::vector<std::string>{"pipeline-one-ipu @ model"});
  CHECK(classes(placed(0, 1)).empty());
  // place refuses to write it.
  test::TempDir dir;
  test::writeProto(test::parseModel(placed(0, 1)), dir / "m.onnx");
  auto r =
      test::run(test::graphrwBin() + " place '" + (dir / "m.onnx").string() +
                "' --stage op_type=Relu --stage op_type=Sigmoid --ipus 0,0 -o '" + (dir / "out.onnx").string() + "'");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("2 pipeline stages all on IPU 0") && Catch::Contains("ir.cpp:580-587"));
  CHECK_FALSE(std::filesystem::exists(dir / "out.onnx"));
}

TEST_CASE("popart session: reflect Pad where a gradient flows, in training only", "[popart]") {
  auto pad = [](const std::string& mode, bool afterWeight) {
    std::string body = afterWeight ? "  A = Mul(X, w)\n  Y = Pad <mode = \"" + mode + "\"> (A, p)\n"
                                   : "  B = Pad <mode = \"" + mode + "\"> (X, p)\n  Y = Mul(B, w)\n";
    return "<ir_version: 6, opset_import: [\"\" : 11]>\nmain (float[1,1,2,2] X) => (float[1,1,4,4] Y) "
           "<float[1] w = {2}> {\n  p = Constant <value = int64[8] {0,0,1,1,0,0,1,1}> ()\n" +
           body + "}\n";
  };
  CHECK(classes(pad("reflect", true), true) ==
        std::vector<std::string>{"pad-mode-training @ the node producing 'Y' (ai.onnx::Pad)"});
  CHECK(classes(pad("edge", true), true).size() == 1);
  CHECK(classes(pad("reflect", true), false).empty());  // inference: no gradient
  CHECK(classes(pad("constant", true), true).empty());
  CHECK(classes(pad("reflect", false), true).empty());  // on the graph input: nothing to differentiate
}

TEST_CASE("popart session: a graph input read on two IPUs while pipelining", "[popart]") {
  auto placed = [](int ipu1) {
    return "<ir_version: 6, opset_import: [\"\" : 11]>\nmain (float[2,3] X) => (float[2,3] Y) {\n"
           "  A = Relu <__pipeline_stage: int = 0, __ipu_number: int = 0> (X)\n"
           "  Y = Add <__pipeline_stage: int = 1, __ipu_number: int = " +
           std::to_string(ipu1) + "> (A, X)\n}\n";
  };
  CHECK(classes(placed(1)) == std::vector<std::string>{"input-ipus @ graph input 'X'"});
  CHECK(classes(placed(0)) == std::vector<std::string>{"pipeline-one-ipu @ model"});
}

TEST_CASE("place routes a graph input read on two IPUs through one Identity", "[popart][place]") {
  test::TempDir dir;
  test::writeProto(test::parseModel(R"(
<ir_version: 6, opset_import: ["" : 11]>
main (float[2,3] X) => (float[2,3] Y) {
  A = Relu(X)
  Y = Add(A, X)
}
)"),
                   dir / "m.onnx");
  auto out = dir / "out.onnx";
  auto r = test::run(test::graphrwBin() + " place '" + (dir / "m.onnx").string() +
                     "' --stage op_type=Relu --stage op_type=Add --ipus 0,1 -o '" + out.string() + "' --report '" +
                     (dir / "report.json").string() + "'");
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto m = test::readProto(out);
  size_t readers = 0;
  for (const auto& n : m.graph().node())
    for (const auto& in : n.input())
      if (in == "X") {
        ++readers;
        CHECK(n.op_type() == "Identity");
      }
  CHECK(readers == 1);
  auto report = nlohmann::json::parse(test::readFile(dir / "report.json"));
  CHECK(report["passes"][0]["inputs_routed"] == 1);
  auto check = test::run(test::graphrwBin() + " validate --target popart '" + out.string() + "'");
  INFO(check.out);
  CHECK(check.status == 0);
  CHECK(test::ortCompare(dir / "m.onnx", out)["ok"] == true);
  // Again on its output: nothing changes.
  auto again = dir / "again.onnx";
  REQUIRE(test::run(test::graphrwBin() + " place '" + out.string() +
                    "' --stage op_type=Relu --stage op_type=Add --ipus 0,1 -o '" + again.string() + "'")
              .status == 0);
  CHECK(test::readFile(again) == test::readFile(out));
}
