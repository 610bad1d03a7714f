// legalize --mode training and the initializers that are no parameter: PopART
// makes every initializer of a training session a Variable and refuses an
// integer one (willow/src/ir.cpp:3080-3083); legalize makes them Constants.
#include <catch2/catch.hpp>

#include <map>

#include "ort.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::test;

namespace {

// position ids (int64) read by a Gather, a sinusoidal table (a float buffer)
// added, a weight W, and a BatchNormalization whose running statistics are
// float initializers too.
const char* kBuffers = R"(
<ir_version: 8, opset_import: ["" : 13]>
main (float[2,3,4] X) => (float[2,3,4] Y)
    <int64[3] position_ids = {0, 1, 2},
     float[8,4] pe = {0,0.1,0.2,0.3, 1,1.1,1.2,1.3, 2,2.1,2.2,2.3, 3,3.1,3.2,3.3,
                      4,4.1,4.2,4.3, 5,5.1,5.2,5.3, 6,6.1,6.2,6.3, 7,7.1,7.2,7.3},
     float[4,4] W = {1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4},
     float[3] scale = {1,1,1}, float[3] bias = {0,0,0}, float[3] mean = {0,0,0}, float[3] var = {1,1,1}> {
  P = Gather <axis = 0> (pe, position_ids)
  A = Add(X, P)
  M = MatMul(A, W)
  Y = BatchNormalization <epsilon = 0.001> (M, scale, bias, mean, var)
}
)";

std::map<std::string, int> initializerTypes(const onnx::ModelProto& m) {
  std::map<std::string, int> out;
  for (const auto& t : m.graph().initializer()) out[t.name()] = t.data_type();
  return out;
}

std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_CASE("legalize training: integer initializers become Constants, parameters stay", "[legalize][training]") {
  TempDir dir;
  writeProto(parseModel(kBuffers), dir / "m.onnx");
  auto r = run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " -o " + q(dir / "out.onnx") + " --report " +
               q(dir / "report.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto out = readProto(dir / "out.onnx");
  auto inits = initializerTypes(out);
  CHECK_FALSE(inits.count("position_ids"));  // a Constant now, or folded into one with the Gather
  CHECK(inits.count("pe"));  // float: a parameter, unless --parameters says otherwise
  CHECK(inits.count("W"));
  for (const auto& [name, type] : inits) CHECK(type == onnx::TensorProto::FLOAT);
  auto report = nlohmann::json::parse(readFile(dir / "report.json"));
  auto steps = report["passes"][0]["steps"];
  CHECK(steps["made_constant"]["integer"] == nlohmann::json::array({"position_ids"}));
  CHECK(steps["made_constant"]["float"].empty());
  // What PopART would have refused is gone, and the maths is the same.
  auto check = run(graphrwBin() + " validate " + q(dir / "out.onnx") + " --target popart");
  CHECK(check.status == 0);
  auto same = ortCompare(dir / "m.onnx", dir / "out.onnx");
  CHECK(same["ok"] == true);
}

TEST_CASE("legalize training --parameters: float initializers it does not name become Constants",
          "[legalize][training]") {
  TempDir dir;
  writeProto(parseModel(kBuffers), dir / "m.onnx");
  // One name a line, as `for n, _ in model.named_parameters(): print(n)` writes them.
  writeFile(dir / "params.txt", "# model.named_parameters()\nW\nscale\n\nbias\n");
  auto r = run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " --parameters " + q(dir / "params.txt") + " -o " +
               q(dir / "out.onnx") + " --report " + q(dir / "report.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto out = readProto(dir / "out.onnx");
  auto inits = initializerTypes(out);
  CHECK_FALSE(inits.count("pe"));
  CHECK_FALSE(inits.count("position_ids"));
  // The parameters, and BatchNormalization's running statistics (updated by copy, not trained).
  for (const char* name : {"W", "scale", "bias", "mean", "var"}) CHECK(inits.count(name));
  auto steps = nlohmann::json::parse(readFile(dir / "report.json"))["passes"][0]["steps"];
  CHECK(steps["made_constant"]["float"] == nlohmann::json::array({"pe"}));
  CHECK(ortCompare(dir / "m.onnx", dir / "out.onnx")["ok"] == true);

  // The same list as JSON, from a rule file beside it (a relative path is the rule file's).
  writeFile(dir / "params.json", R"(["W", "scale", "bias"])");
  writeFile(dir / "rules.json", R"({"version": 1, "passes": [{"pass": "legalize", "parameters": "params.json"}]})");
  auto viaRules = run(graphrwBin() + " run " + q(dir / "rules.json") + " " + q(dir / "m.onnx") + " -o " +
                      q(dir / "rules-out.onnx"));
  INFO(viaRules.err);
  REQUIRE(viaRules.status == 0);
  CHECK(readFile(dir / "rules-out.onnx") == readFile(dir / "out.onnx"));
}

TEST_CASE("legalize --parameters: bad lists are refused in one line, nothing written", "[legalize][training]") {
  TempDir dir;
  writeProto(parseModel(kBuffers), dir / "m.onnx");
  auto refuse = [&](const std::string& args, const std::string& message) {
    auto r = run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " " + args + " -o " + q(dir / "out.onnx"));
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(message));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(dir / "out.onnx"));
  };
  writeFile(dir / "unknown.txt", "W\nencoder.weight\n");
  refuse("--parameters " + q(dir / "unknown.txt"),
         "names 'encoder.weight', which is no initializer of the model's graph");
  writeFile(dir / "two.txt", "W scale\n");
  refuse("--parameters " + q(dir / "two.txt"), "two.txt:1: 'W scale' is not one name");
  writeFile(dir / "bad.json", R"(["W", 3])");
  refuse("--parameters " + q(dir / "bad.json"), "bad.json: entry 1 is not a name");
  refuse("--parameters " + q(dir / "missing.txt"), "missing.txt: cannot read the parameter list");
  writeFile(dir / "ok.txt", "W\n");
  refuse("--parameters " + q(dir / "ok.txt") + " --mode inference", "it needs mode training");
}

TEST_CASE("validate --target popart --mode training: an integer initializer is a finding of its own",
          "[validate][popart][training]") {
  TempDir dir;
  // Clean for PopART's import (IR 6, opset 11): the integer initializer is the one finding, and only for training.
  writeProto(parseModel(R"(
<ir_version: 6, opset_import: ["" : 11]>
main (float[2,4] X) => (float[2,4] Y)
    <int64[2] position_ids = {0, 1},
     float[8,4] pe = {0,0,0,0, 1,1,1,1, 2,2,2,2, 3,3,3,3, 4,4,4,4, 5,5,5,5, 6,6,6,6, 7,7,7,7}> {
  P = Gather <axis = 0> (pe, position_ids)
  Y = Add(X, P)
}
)"),
             dir / "m.onnx");
  auto json = [&](const std::string& args) {
    auto r = run(graphrwBin() + " validate " + q(dir / "m.onnx") + " --json --target popart " + args);
    INFO(r.err);
    return nlohmann::json::parse(r.out);
  };
  CHECK(json("")["valid"] == true);
  CHECK(json("--mode inference")["valid"] == true);
  auto training = json("--mode training");
  CHECK(training["valid"] == false);
  REQUIRE(training["findings"].size() == 1);
  CHECK(training["findings"][0]["check"] == "popart:training-integer-variable");
  CHECK(training["findings"][0]["where"] == "initializer 'position_ids'");
  CHECK_THAT(training["findings"][0]["message"].get<std::string>(), Catch::Contains("willow/src/ir.cpp:3080-3083"));
  auto r = run(graphrwBin() + " validate " + q(dir / "m.onnx") + " --mode training");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--mode needs --target popart"));
  // legalize's output has no such finding.
  REQUIRE(run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " -o " + q(dir / "out.onnx")).status == 0);
  auto after = run(graphrwBin() + " validate " + q(dir / "out.onnx") + " --json --target popart --mode training");
  CHECK(nlohmann::json::parse(after.out)["valid"] == true);
}

TEST_CASE("legalize training --frozen: the parameters it names become Constants", "[legalize][training]") {
  TempDir dir;
  writeProto(parseModel(kBuffers), dir / "m.onnx");
  // W frozen; the running statistics match the glob too but are no parameters, and stay.
  auto r =
      run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " --frozen 'name=W' --frozen 'name_regex=(mean|var)' " +
          "-o " + q(dir / "out.onnx") + " --report " + q(dir / "report.json"));
  INFO(r.err);
  CHECK(r.status == 2);  // name_regex=(mean|var) selects no parameter: the statistics are none
  CHECK_THAT(r.err, Catch::Contains("--frozen 'name_regex=(mean|var)' matched no parameter"));
  CHECK_FALSE(std::filesystem::exists(dir / "out.onnx"));
  r = run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " --frozen 'name=W' --frozen 'name=s*' -o " +
          q(dir / "out.onnx") + " --report " + q(dir / "report.json"));
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto inits = initializerTypes(readProto(dir / "out.onnx"));
  CHECK_FALSE(inits.count("W"));
  CHECK_FALSE(inits.count("scale"));
  for (const char* name : {"pe", "bias", "mean", "var"}) CHECK(inits.count(name));
  auto steps = nlohmann::json::parse(readFile(dir / "report.json"))["passes"][0]["steps"];
  CHECK(steps["frozen"] == nlohmann::json::array({"W", "scale"}));
  CHECK(ortCompare(dir / "m.onnx", dir / "out.onnx")["ok"] == true);
  // Selectors over nodes are no selectors of initializers.
  r = run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " --frozen op_type=MatMul -o " + q(dir / "out2.onnx"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("frozen selects initializers by name"));
  r = run(graphrwBin() + " legalize " + q(dir / "m.onnx") + " --frozen name=W --mode inference -o " +
          q(dir / "out2.onnx"));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("it needs mode training"));
}
