// graphrw compare: ONNX Runtime on two models, ai.graphcore ops mapped back.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "ort.h"
#include "support.h"

namespace fs = std::filesystem;
using graphrw::test::run;

namespace {

std::string bin() { return graphrw::test::graphrwBin(); }
std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

void writeModel(const fs::path& path, const std::string& text) {
  graphrw::test::writeProto(graphrw::test::parseModel(text), path);
}

// A version-1 .npy file of float32 or int64 values.
void writeNpy(const fs::path& path, const std::string& descr, const std::vector<int64_t>& shape,
              const std::string& bytes) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ",";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  graphrw::test::writeFile(path, out + header + bytes);
}

}  // namespace

TEST_CASE("compare: same maths passes, a wrong rewrite fails with the largest differences", "[cli][compare]") {
  graphrw::test::TempDir dir;
  writeModel(dir / "a.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) {
  e = Erf (x)
  y = Add (e, x)
}
)");
  writeModel(dir / "b.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) {
  e = Tanh (x)
  y = Add (e, x)
}
)");
  auto same = run(bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "a.onnx"));
  CHECK(same.status == 0);
  CHECK_THAT(same.out,
             Catch::Contains("output y: float32, max abs diff 0 (mean 0), max rel diff 0 (mean 0): within tolerance"));
  auto differ = run(bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "b.onnx") + " --json");
  CHECK(differ.status == 1);
  auto j = nlohmann::json::parse(differ.out);
  CHECK(j["ok"] == false);
  REQUIRE(j["outputs"].size() == 1);
  CHECK(j["outputs"][0]["within"] == false);
  CHECK(j["outputs"][0]["max_abs"].get<double>() > 1e-3);
  // Loose enough, it passes: erf and tanh differ by under 0.1 on [-1, 1).
  CHECK(run(bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "b.onnx") + " --atol 0.1").status == 0);

  SECTION("outputs of another type or shape are a difference") {
    writeModel(dir / "c.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (double[2, 3] y) {
  e = Erf (x)
  s = Add (e, x)
  y = Cast <to = 11> (s)
}
)");
    auto r = run(bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "c.onnx"));
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("types differ: float32 vs float64"));
  }
  SECTION("bad usage and ONNX Runtime missing") {
    auto r = run("GRAPHRW_ORT_DIR=" + dir.path().string() + " " + bin() + " compare " + q(dir / "a.onnx") + " " +
                 q(dir / "a.onnx"));
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("holds no node_modules/onnxruntime-node"));
    auto noInput =
        run(bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "a.onnx") + " --input nope=" + q(dir / "a.onnx"));
    CHECK(noInput.status == 2);
    CHECK_THAT(noInput.out + noInput.err, Catch::Contains("nope"));
  }
}

TEST_CASE("compare: inputs from .npy files, both values of a boolean input", "[cli][compare]") {
  graphrw::test::TempDir dir;
  // The branches differ: only a run with c = true sees it.
  writeModel(dir / "a.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[3] x) => (float[3] y) {
  y = If (c) <then_branch = t () => (float[3] o) { o = Relu (x) }, else_branch = e () => (float[3] o) { o = Neg (x) }>
}
)");
  writeModel(dir / "b.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[3] x) => (float[3] y) {
  y = If (c) <then_branch = t () => (float[3] o) { o = Abs (x) }, else_branch = e () => (float[3] o) { o = Neg (x) }>
}
)");
  float xs[3] = {-1.0f, 0.5f, 2.0f};
  writeNpy(dir / "x.npy", "<f4", {3}, std::string(reinterpret_cast<const char*>(xs), sizeof xs));
  writeNpy(dir / "t.npy", "|b1", {}, std::string(1, '\1'));
  writeNpy(dir / "f.npy", "|b1", {}, std::string(1, '\0'));
  std::string base =
      bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "b.onnx") + " --input x=" + q(dir / "x.npy");
  auto whenFalse = run(base + " --input c=" + q(dir / "f.npy"));
  CHECK(whenFalse.status == 0);
  CHECK_THAT(whenFalse.out, Catch::Contains("input  x: float32[3] " + (dir / "x.npy").string()));
  auto whenTrue = run(base + " --input c=" + q(dir / "t.npy") + " --json");
  CHECK(whenTrue.status == 1);
  auto j = nlohmann::json::parse(whenTrue.out);
  CHECK(j["outputs"][0]["max_abs"].get<double>() == Approx(1.0));  // relu(-1) = 0, abs(-1) = 1
  // Random booleans: some seed in the first few draws true (the harness must not stick at false).
  bool sawTrue = false;
  for (int seed = 1; seed <= 8 && !sawTrue; ++seed)
    sawTrue = run(bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "b.onnx") + " --seed " + std::to_string(seed))
                  .status == 1;
  CHECK(sawTrue);
  auto wrongType =
      run(bin() + " compare " + q(dir / "a.onnx") + " " + q(dir / "a.onnx") + " --input x=" + q(dir / "t.npy"));
  CHECK(wrongType.status == 3);
  CHECK_THAT(wrongType.err, Catch::Contains("holds bool, the model takes float32"));
}

TEST_CASE("compare: ai.graphcore ops by their definitions", "[cli][compare][graphcore]") {
  graphrw::test::TempDir dir;
  // Each ai.graphcore op against a standard-ONNX formulation of the same function.
  writeModel(dir / "std.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 4, 3, 3] x) => (float[2, 4, 3, 3] swish, float[2, 4, 3, 3] scaled, float[2, 4, 3, 3] nop, float[2, 4, 3,
    3] inorm, float[2, 4, 3, 3] gelu)
    <float[4] s = {1.0, 2.0, 0.5, -1.0}, float[4] b = {0.0, 0.1, -0.2, 3.0}, float half = {0.5}, float one = {1.0},
        float r2 = {1.41421356}> {
  sg = Sigmoid (x)
  swish = Mul (x, sg)
  k = Constant <value = float {2.5}> ()
  scaled = Mul (x, k)
  nop = Identity (x)
  inorm = InstanceNormalization <epsilon = 0.001> (x, s, b)
  d = Div (x, r2)
  e = Erf (d)
  a = Add (e, one)
  m = Mul (x, a)
  gelu = Mul (m, half)
}
)");
  writeModel(dir / "ipu.onnx", R"(
<ir_version: 8, opset_import: ["" : 13, "ai.graphcore" : 1]>
g (float[2, 4, 3, 3] x) => (float[2, 4, 3, 3] swish, float[2, 4, 3, 3] scaled, float[2, 4, 3, 3] nop, float[2, 4, 3,
    3] inorm, float[2, 4, 3, 3] gelu)
    <float[4] s = {1.0, 2.0, 0.5, -1.0}, float[4] b = {0.0, 0.1, -0.2, 3.0}> {
  swish = ai.graphcore.Swish (x)
  scaled = ai.graphcore.Scale <scale = 2.5> (x)
  d = ai.graphcore.Detach (x)
  nop = ai.graphcore.Nop (d)
  inorm, mean, invstd = ai.graphcore.GroupNormalization <num_groups = 4, epsilon = 0.001> (x, s, b)
  gelu = ai.graphcore.GeluErf (x)
}
)");
  auto r = run(bin() + " compare " + q(dir / "std.onnx") + " " + q(dir / "ipu.onnx"));
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 7);  // an input, five outputs, the verdict

  SECTION("an op with no definition here is named") {
    writeModel(dir / "other.onnx", R"(
<ir_version: 8, opset_import: ["" : 13, "ai.graphcore" : 1]>
g (float[2, 4, 3, 3] x) => (float[2, 4, 3, 3] y) {
  y = ai.graphcore.Atan2 (x, x)
}
)");
    auto u = run(bin() + " compare " + q(dir / "other.onnx") + " " + q(dir / "other.onnx"));
    CHECK(u.status == 5);
    CHECK_THAT(u.err, Catch::Contains("no standard ONNX definition for ai.graphcore::Atan2"));
  }
}

TEST_CASE("the tests' ONNX Runtime harness sees both values of a boolean input, and output types", "[ort]") {
  graphrw::test::TempDir dir;
  const char* a = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[3] x) => (float[3] y) {
  y = If (c) <then_branch = t () => (float[3] o) { o = Relu (x) }, else_branch = e () => (float[3] o) { o = Neg (x) }>
}
)";
  const char* b = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[3] x) => (float[3] y) {
  y = If (c) <then_branch = t () => (float[3] o) { o = Abs (x) }, else_branch = e () => (float[3] o) { o = Neg (x) }>
}
)";
  writeModel(dir / "a.onnx", a);
  writeModel(dir / "b.onnx", b);
  CHECK(graphrw::test::ortCompare(dir / "a.onnx", dir / "a.onnx")["ok"] == true);
  auto differ = graphrw::test::ortCompare(dir / "a.onnx", dir / "b.onnx");
  INFO(differ.dump());
  CHECK(differ["ok"] == false);  // only the then branch differs
  writeModel(dir / "d.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[3] x) => (double[3] y) {
  f = Neg (x)
  y = Cast <to = 11> (f)
}
)");
  writeModel(dir / "f.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (bool c, float[3] x) => (float[3] y) {
  y = Neg (x)
}
)");
  auto types = graphrw::test::ortCompare(dir / "f.onnx", dir / "d.onnx");
  CHECK(types["ok"] == false);
  CHECK(types["outputs"]["y"] == "types float32 vs float64");
}

namespace {

std::string floats(const std::vector<double>& v) {
  std::string out;
  char buf[32];
  for (double d : v) {
    std::snprintf(buf, sizeof buf, "%.9g", d);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

std::string dims(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t d : shape) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

}  // namespace

TEST_CASE("compare maps ai.graphcore::GroupNormalization as numpy computes it, for every num_groups and rank",
          "[cli][compare][graphcore]") {
  // The oracle is numpy (tests/ort/groupnorm_reference.py), not graphrw: its
  // output is written as a constant, and compare must find the mapped
  // GroupNormalization equal to it under ONNX Runtime.
  graphrw::test::TempDir dir;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 8, 3, 3}, std::vector<int64_t>{2, 8, 5}}) {
    int64_t count = 1, c = shape[1];
    for (int64_t d : shape) count *= d;
    std::vector<double> x, scale, bias;
    for (int64_t i = 0; i < count; ++i)
      x.push_back(std::sin(0.37 * static_cast<double>(i)) * (1.0 + static_cast<double>(i % 7)));
    for (int64_t i = 0; i < c; ++i) {
      scale.push_back(0.5 + 0.25 * static_cast<double>(i));
      bias.push_back(0.1 * static_cast<double>(i) - 0.3);
    }
    auto reference = [&](int64_t groups) {
      nlohmann::json in = {{"x", x},       {"shape", shape},       {"scale", scale},
                           {"bias", bias}, {"num_groups", groups}, {"epsilon", 1e-3}};
      graphrw::test::writeFile(dir / "in.json", in.dump());
      auto r = run("/usr/bin/python3 " GRAPHRW_SOURCE_DIR "/tests/ort/groupnorm_reference.py < " + q(dir / "in.json"));
      REQUIRE(r.status == 0);
      return nlohmann::json::parse(r.out).get<std::vector<double>>();
    };
    const std::string t = "float[" + dims(shape) + "]";
    for (int64_t groups : {1, 2, 4, 8}) {
      INFO("shape " << dims(shape) << ", num_groups " << groups);
      writeModel(dir / "numpy.onnx", "<ir_version: 8, opset_import: [\"\" : 13]>\ng () => (" + t +
                                         " y) {\n  y = Constant <value = " + t + " {" + floats(reference(groups)) +
                                         "}> ()\n}\n");
      auto ipu = [&](int64_t g) {
        return "<ir_version: 8, opset_import: [\"\" : 13, \"ai.graphcore\" : 1]>\ng () => (" + t + " y) <" + t +
               " x = {" + floats(x) + "}, float[" + std::to_string(c) + "] s = {" + floats(scale) + "}, float[" +
               std::to_string(c) + "] b = {" + floats(bias) +
               "}> {\n  y, mean, invstd = ai.graphcore.GroupNormalization <num_groups = " + std::to_string(g) +
               ", epsilon = 0.001> (x, s, b)\n}\n";
      };
      writeModel(dir / "ipu.onnx", ipu(groups));
      auto same = run(bin() + " compare " + q(dir / "numpy.onnx") + " " + q(dir / "ipu.onnx") + " --json");
      INFO(same.out << same.err);
      CHECK(same.status == 0);
      // The check can fail: the same data grouped otherwise is not numpy's.
      writeModel(dir / "other.onnx", ipu(groups == 1 ? 2 : 1));
      auto other = run(bin() + " compare " + q(dir / "numpy.onnx") + " " + q(dir / "other.onnx"));
      CHECK(other.status == 1);
    }
  }
}

TEST_CASE("compare: statistics per output, the worst element, --dim, --val-range, usage errors", "[cli][compare]") {
  graphrw::test::TempDir dir;
  writeModel(dir / "a.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq] x) => (float[batch, seq] y) { y = Relu (x) }
)");
  // B differs from A exactly where x > 0.5: Relu(x) + (x > 0.5).
  writeModel(dir / "b.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq] x) => (float[batch, seq] y) {
  r = Relu (x)
  h = Constant <value = float {0.5}> ()
  g = Greater (x, h)
  f = Cast <to = 1> (g)
  y = Add (r, f)
}
)");
  const auto a = q(dir / "a.onnx"), b = q(dir / "b.onnx");
  auto dims = run(bin() + " compare " + a + " " + a + " --dim seq=7 --json");
  REQUIRE(dims.status == 0);
  auto j = nlohmann::json::parse(dims.out);
  CHECK(j["inputs"][0]["dims"] == nlohmann::json::array({1, 7}));
  CHECK(j["dims_set_to_1"] == nlohmann::json::array({"batch"}));
  auto text = run(bin() + " compare " + a + " " + a);
  CHECK_THAT(text.out, Catch::Contains("dims   batch, seq set to 1 (--dim NAME=N to choose)"));

  // All inputs in [0.6, 0.9): every element differs by exactly 1.
  auto all = run(bin() + " compare " + a + " " + b + " --dim batch=2 --dim seq=3 --val-range 0.6,0.9 --json");
  CHECK(all.status == 1);
  auto out = nlohmann::json::parse(all.out)["outputs"][0];
  CHECK(out["elements"] == 6);
  CHECK(out["mismatched"] == 6);
  CHECK(out["max_abs"].get<double>() == Approx(1.0));
  CHECK(out["mean_abs"].get<double>() == Approx(1.0));
  CHECK(out["nan"] == nlohmann::json{{"a", 0}, {"b", 0}});
  CHECK(out["worst"]["index"].size() == 2);
  // In [-1, -0.5): no element differs.
  CHECK(run(bin() + " compare " + a + " " + b + " --dim batch=2 --dim seq=3 --val-range=-1,-0.5").status == 0);
  auto some = run(bin() + " compare " + a + " " + b + " --dim batch=4 --dim seq=8");
  CHECK(some.status == 1);
  CHECK_THAT(some.out, Catch::Contains(" of 32 elements outside; worst at ["));

  const std::pair<std::string, std::string> bad[] = {
      {"--dim nope=2", "--dim nope=2: no input of either model has a dimension 'nope'"},
      {"--dim seq=0", "--dim 'seq=0': expected NAME=N"},
      {"--dim seq=2.5", "--dim 'seq=2.5': expected NAME=N"},
      {"--dim seq=2 --dim seq=3", "--dim: 'seq' is given twice"},
      {"--val-range 1,0", "--val-range '1,0': expected [NAME=]LO,HI"},
      {"--val-range 0,inf", "--val-range '0,inf'"},
      {"--val-range 0", "--val-range '0'"},
  };
  for (const auto& [args, says] : bad) {
    INFO(args);
    auto r = run(bin() + " compare " + a + " " + b + " " + args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
  }
}

TEST_CASE("compare: a placed pooler (Gemm + Tanh, fused by ONNX Runtime) compares equal, files run as they are",
          "[cli][compare][graphcore]") {
  graphrw::test::TempDir dir;
  // A BERT pooler: the first token's hidden state through Gemm and Tanh.
  // ONNX Runtime fuses Gemm + Tanh into FusedGemm and copies the node's
  // attributes onto it: a `__ipu_number` there made it refuse the model.
  writeModel(dir / "pooler.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 4, 3] hidden) => (float[2, 3] pooled)
  <float[3, 3] w = {0.1, 0.2, 0.3, -0.4, 0.5, 0.6, 0.7, -0.8, 0.9}, float[3] b = {0.01, 0.02, -0.03},
   int64[1] first = {0}, int64[1] one = {1}, int64[1] axis = {1}> {
  s = Slice (hidden, first, one, axis)
  f = Squeeze (s, axis)
  h = Gemm <transB = 1> (f, w, b)
  pooled = Tanh (h)
}
)");
  auto placed = run(bin() + " place " + q(dir / "pooler.onnx") +
                    " --stage op_type=Slice --stage op_type=Gemm --ipus 0,1 -o " + q(dir / "placed.onnx"));
  REQUIRE(placed.status == 0);
  REQUIRE_THAT(graphrw::test::readFile(dir / "placed.onnx"), Catch::Contains("__ipu_number"));
  auto r = run(bin() + " compare " + q(dir / "pooler.onnx") + " " + q(dir / "placed.onnx") + " --json");
  INFO(r.err);
  CHECK(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["ok"] == true);
  // The original runs from its own file; the placed model from a copy without `__` attributes.
  CHECK(j["run"] == nlohmann::json{{"a", "file"}, {"b", "standard ONNX copy"}});
}

TEST_CASE("compare: --input shapes, per-input value ranges, the histogram line", "[cli][compare]") {
  graphrw::test::TempDir dir;
  writeModel(dir / "a.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq] x, int64[batch, seq] ids) => (float[batch, seq] y, int64[batch, seq] z) {
  y = Relu (x)
  z = Identity (ids)
}
)");
  // B adds 1 where x > 0.5.
  writeModel(dir / "b.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq] x, int64[batch, seq] ids) => (float[batch, seq] y, int64[batch, seq] z) {
  r = Relu (x)
  h = Constant <value = float {0.5}> ()
  g = Greater (x, h)
  f = Cast <to = 1> (g)
  y = Add (r, f)
  z = Identity (ids)
}
)");
  const auto a = q(dir / "a.onnx"), b = q(dir / "b.onnx");
  auto r = run(bin() + " compare " + a + " " + a + " --input x=3,5 --input ids=[3,5] --val-range ids=[100,104] --json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["inputs"][0]["dims"] == nlohmann::json::array({3, 5}));
  CHECK(j["inputs"][1]["dims"] == nlohmann::json::array({3, 5}));
  CHECK(j["dims_set_to_1"].empty());
  // z echoes ids: the output's values show the range was used for the integer input.
  r = run(bin() + " compare " + a + " " + b +
          " --input x=3,5 --input ids=3,5 --val-range ids=100,104 --val-range 0.6,0.9 --json");
  CHECK(r.status == 1);
  j = nlohmann::json::parse(r.out);
  CHECK(j["outputs"][0]["mismatched"] == 15);  // every x in [0.6, 0.9): every y differs by 1
  CHECK(j["outputs"][0]["histogram"]["counts"] == nlohmann::json::array({0, 0, 0, 0, 0, 0, 0, 0, 0, 15}));
  CHECK(j["outputs"][1]["mismatched"] == 0);
  auto idsWorst = j["outputs"][1]["worst"]["a"].get<double>();
  CHECK((idsWorst >= 100 && idsWorst < 104));
  // Values in [-1, 1): some differ, the histogram splits zeros from ones.
  r = run(bin() + " compare " + a + " " + b + " --input x=4,8 --input ids=4,8");
  CHECK(r.status == 1);
  CHECK_THAT(r.out, Catch::Contains("|A-B| in 10 bins over [0, 1]: "));
  auto hist = r.out.substr(r.out.find("10 bins over [0, 1]: ") + 21);
  hist = hist.substr(0, hist.find('\n'));
  int zeros = 0, ones = 0, middle = 0;
  std::sscanf(hist.c_str(), "%d %*d %*d %*d %*d %*d %*d %*d %d %d", &zeros, &middle, &ones);
  CHECK(zeros + ones == 32);
  CHECK(ones > 0);
  CHECK(middle == 0);

  const std::pair<std::string, std::string> bad[] = {
      {"--input x=3", "--input x: 1 dimensions given, the input has 2"},
      {"--input x=3,-1", "--input 'x=3,-1': a shape is D,D,..."},
      {"--input nope=3,4", "--input nope=...: "},
      {"--input x=3,4 --input x=3,5", "--input: 'x' is given twice"},
      {"--val-range nope=0,1", "--val-range nope=...: "},
      {"--val-range x=1,0", "--val-range 'x=1,0': expected [NAME=]LO,HI"},
      {"--val-range =0,1", "--val-range '=0,1'"},
      {"--val-range 0,1 --val-range -1,1", "--val-range: the default range is given twice"},
      {"--val-range x=0,1 --val-range x=0,2", "--val-range: 'x' is given twice"},
  };
  for (const auto& [args, says] : bad) {
    INFO(args);
    auto e = run(bin() + " compare " + a + " " + b + " " + args);
    CHECK(e.status == 2);
    CHECK_THAT(e.err, Catch::Contains(says));
  }
  // A fixed dimension must agree.
  writeModel(dir / "fixed.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, seq] x) => (float[2, seq] y) { y = Relu (x) }
)");
  auto e = run(bin() + " compare " + q(dir / "fixed.onnx") + " " + q(dir / "fixed.onnx") + " --input x=3,4");
  CHECK(e.status == 2);
  CHECK_THAT(e.err, Catch::Contains("--input x: dimension 0 is fixed at 2, not 3"));
}

TEST_CASE("compare finds the ONNX Runtime bootstrap installs, from any folder, without GRAPHRW_ORT_DIR",
          "[cli][compare][install]") {
  graphrw::test::TempDir dir;
  writeModel(dir / "a.onnx", R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) { y = Relu (x) }
)");
  // bash .ci/bootstrap (and --tool --with-compare) installs it in npm's global folder.
  auto r = run("cd " + q(dir / "") + " && env -u GRAPHRW_ORT_DIR -u NODE_PATH " + bin() + " compare a.onnx a.onnx");
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Catch::Contains("same outputs within"));
  // A typo in bootstrap's options stops it before it installs anything.
  auto typo = run("bash " + q(fs::path(GRAPHRW_SOURCE_DIR) / ".ci" / "bootstrap") + " --tool --with-comapre");
  CHECK(typo.status == 2);
  CHECK_THAT(typo.err, Catch::Contains("bootstrap: unknown option '--with-comapre' (--tool, --with-compare)"));
}
