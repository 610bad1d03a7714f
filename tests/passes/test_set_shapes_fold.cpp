#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <map>

#include "driver/pass_manager.h"
#include "helpers.h"
#include "io/loader.h"
#include "io/writer.h"
#include "passes/fold/fold.h"
#include "passes/popart/legalize/legalize.h"
#include "passes/set_shapes/set_shapes.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;
using namespace graphrw::ir;
using namespace graphrw::test;

namespace {

const char* kDynamic = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, seq, 4] x, int64[batch, seq] ids) => (float[batch, seq, 4] y) <int64[3] shape = {0, -1, 4}> {
  r = Reshape(x, shape)
  y = Relu(r)
}
)";

std::string shapeOf(const onnx::ValueInfoProto& v) {
  std::string s;
  for (const auto& d : v.type().tensor_type().shape().dim())
    s += (s.empty() ? "" : ",") + (d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param());
  return s;
}

onnx::ModelProto foldOrShape(const onnx::ModelProto& m, std::unique_ptr<Pass> pass, nlohmann::json* report = nullptr) {
  auto model = runPass(m, std::move(pass), report);
  TempDir dir;
  writeModel(*model, (dir / "o.onnx").string());
  return readProto(dir / "o.onnx");
}

std::unique_ptr<Pass> byInput(const std::string& name, std::vector<int64_t> dims) {
  passes::SetShapesOptions o;
  o.inputs[name] = std::move(dims);
  return passes::createSetShapesPass(o);
}
std::unique_ptr<Pass> byDims(std::map<std::string, int64_t> dims) {
  passes::SetShapesOptions o;
  o.dims = std::move(dims);
  return passes::createSetShapesPass(o);
}

}  // namespace

TEST_CASE("set-shapes: by dimension name, propagated through Reshape into value_info and outputs", "[set-shapes]") {
  auto out = foldOrShape(parseModel(kDynamic), byDims({{"batch", 2}, {"seq", 3}}));
  CHECK(shapeOf(out.graph().input(0)) == "2,3,4");
  CHECK(shapeOf(out.graph().input(1)) == "2,3");
  CHECK(shapeOf(out.graph().output(0)) == "2,3,4");
  bool r = false;
  for (const auto& vi : out.graph().value_info())
    if (vi.name() == "r") r = shapeOf(vi) == "2,3,4";
  CHECK(r);
  checkValid(*loadModel(out));
}

TEST_CASE("set-shapes: a named dimension gets its size where inference does not reach, and contradictions are refused",
          "[set-shapes]") {
  // custom.Foo and custom.Bar have no shape inference: their outputs keep
  // the types the model declared, which name `batch`.
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13, "custom" : 1]>
g (float[batch, 4] x) => (float[batch, 4] y, float[batch, 4] w) {
  z = custom.Foo(x)
  y = Relu(z)
  w = custom.Bar(z)
}
)");
  auto* vi = m.mutable_graph()->add_value_info();
  vi->set_name("z");
  *vi->mutable_type() = m.graph().input(0).type();
  auto out = foldOrShape(m, byDims({{"batch", 2}}));
  CHECK(shapeOf(out.graph().input(0)) == "2,4");
  CHECK(shapeOf(out.graph().output(0)) == "2,4");
  CHECK(shapeOf(out.graph().output(1)) == "2,4");
  std::string z;
  for (const auto& v : out.graph().value_info())
    if (v.name() == "z") z = shapeOf(v);
  CHECK(z == "2,4");
  checkValid(*loadModel(out));

  // An output declared [batch, 4] that the new input shapes make [batch + 1, 4]:
  // the declaration contradicts the input whatever `batch` is.
  auto clash = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 4] x) => (float[batch, 4] y) <float[1, 4] c = {1, 2, 3, 4}> {
  y = Concat <axis = 0> (x, c)
}
)");
  CHECK_THROWS_WITH(runPass(clash, byDims({{"batch", 2}})),
                    Catch::Contains("output 'y' is declared [2,4] but the new input shapes give [3,4]"));
  CHECK_THROWS_WITH(runPass(clash, byDims({{"batch", 3}})),
                    Catch::Contains("output 'y' is declared [3,4] but the new input shapes give [4,4]"));
}

TEST_CASE("set-shapes: by input, and every contradiction names the input", "[set-shapes]") {
  auto m = parseModel(kDynamic);
  auto out = foldOrShape(m, byInput("x", {1, 5, 4}));
  CHECK(shapeOf(out.graph().input(0)) == "1,5,4");
  CHECK(shapeOf(out.graph().input(1)) == "batch,seq");  // another input keeps its names
  CHECK_THROWS_WITH(runPass(m, byInput("x", {1, 5})),
                    Catch::Contains("input 'x' has shape [batch,seq,4] (rank 3), not 2 dimensions"));
  CHECK_THROWS_WITH(runPass(m, byInput("x", {1, 5, 8})), Catch::Contains("dimension 2 is fixed at 4, not 8"));
  CHECK_THROWS_WITH(runPass(m, byInput("xx", {1})), Catch::Contains("no input 'xx' (did you mean 'x'?)"));
  CHECK_THROWS_WITH(runPass(m, byDims({{"bacth", 1}})),
                    Catch::Contains("no input of the model has a dimension named 'bacth' (did you mean 'batch'?)"));
  try {
    runPass(m, byInput("x", {1, 5}));
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
  }
}

TEST_CASE("set-shapes and legalize: one rule for --input with --dim", "[set-shapes][legalize]") {
  auto m = parseModel(kDynamic);  // x: [batch, seq, 4], ids: [batch, seq]
  auto both = [](std::vector<int64_t> dims, std::map<std::string, int64_t> names) {
    passes::SetShapesOptions o;
    o.inputs["x"] = std::move(dims);
    o.dims = std::move(names);
    return passes::createSetShapesPass(o);
  };
  // --input and --dim agreeing on a dimension of the same input: accepted, for every input.
  auto out = foldOrShape(m, both({2, 5, 4}, {{"batch", 2}}));
  CHECK(shapeOf(out.graph().input(0)) == "2,5,4");
  CHECK(shapeOf(out.graph().input(1)) == "2,seq");
  // Disagreeing: the input, the dimension and both values.
  CHECK_THROWS_WITH(runPass(m, both({2, 5, 4}, {{"batch", 3}})),
                    Catch::Contains("--input x gives dimension 0 ('batch') as 2, but --dim batch=3"));
  // A name no input declares: the inputs' dimensions are listed.
  CHECK_THROWS_WITH(runPass(m, both({2, 5, 4}, {{"tokens", 2}})),
                    Catch::Contains("no input of the model has a dimension named 'tokens'; the inputs: 'x' "
                                    "[batch,seq,4], 'ids' [batch,seq]"));
  // legalize follows the same rule: a static model has no dimension 'batch' any more.
  auto fixed = foldOrShape(m, byDims({{"batch", 2}, {"seq", 5}}));
  REQUIRE(shapeOf(fixed.graph().input(1)) == "2,5");
  passes::LegalizeOptions l;
  l.dims = {{"batch", 2}};
  try {
    runPass(fixed, passes::createLegalizePass(l));
    FAIL("legalize accepted --dim batch=2 on a model whose inputs have no dimension 'batch'");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::Usage);
    CHECK_THAT(
        e.what(),
        Catch::Contains("no input of the model has a dimension named 'batch'; the inputs: 'x' [2,5,4], 'ids' [2,5]"));
  }
}

TEST_CASE("fold: shape computations on static inputs become initializers, same maths", "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3,4] x) => (float[6,4] y, bool[3] c) <int64[1] zero = {0}, int64[1] one = {1}, int64[1] last = {2}> {
  s = Shape(x)
  a = Gather <axis = 0> (s, zero)
  b = Gather <axis = 0> (s, one)
  ab = Mul(a, b)
  l = Gather <axis = 0> (s, last)
  shape = Concat <axis = 0> (ab, l)
  y = Reshape(x, shape)
  lim = Constant <value = int64 {3}> ()
  st = Constant <value = int64 {0}> ()
  dl = Constant <value = int64 {1}> ()
  r = Range(st, lim, dl)
  two = Constant <value = int64 {2}> ()
  lt = Less(r, two)
  n = Not(lt)
  c = Or(n, lt)
}
)");
  nlohmann::json report;
  auto out = foldOrShape(m, passes::createFoldPass({}), &report);
  INFO(report.dump());
  auto ops = opCounts(out);
  CHECK(ops.size() == 1);
  CHECK(ops["ai.onnx::Reshape"] == 1);
  CHECK(report["folded"]["Shape"] == 1);
  CHECK(report["folded"]["Range"] == 1);
  checkSameMaths(m, out);
  checkValid(*loadModel(out));
}

TEST_CASE("fold: NonZero of a constant (zeros, -0.0, a 2-D input) matches ONNX Runtime", "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (int64[1] x) => (int64[2, 3] y, int64[1, 2] z) <float[2, 3] c = {0.0, 1.5, -0.0, 2.0, 0.0, -3.0}, int32[4] d = {0,
    7, 0, 1}> {
  y = NonZero(c)
  nz = NonZero(d)
  z = Add(nz, x)
}
)");
  nlohmann::json report;
  auto out = foldOrShape(m, passes::createFoldPass({}), &report);
  INFO(report.dump());
  CHECK(report["folded"]["NonZero"] == 2);
  CHECK(opCounts(out).count("ai.onnx::NonZero") == 0);
  checkSameMaths(m, out);
}

TEST_CASE("fold: Einsum with implicit output, broadcast ellipsis, a diagonal and integers matches ONNX Runtime",
          "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1] x, int64[1] i) => (float[2, 4, 2, 5] y, float[3] d, int64[2, 2] z, float[] t) <
    float[2, 1, 2, 3] a = {1.0, -2.0, 0.5, 3.0, 0.25, -1.0, 2.0, 1.5, -0.5, 0.0, 4.0, 1.0},
    float[1, 4, 3, 5] b = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, -0.1, -0.2,
        -0.3, -0.4,
                        -0.5, -0.6, -0.7, -0.8, -0.9, -1.0, -1.1, -1.2, -1.3, -1.4, -1.5, 2.0, 1.0, 0.0, -1.0, -2.0,
                            0.5,
                        0.25, 0.125, 1.5, 2.5, 3.5, -3.5, -2.5, -1.5, -0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0,
                        10.0, -1.0, -2.0, -3.0, -4.0, -5.0},
    float[3, 3] sq = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0},
    int64[2, 3] p = {1, -2, 3, 4, 5, -6}, int64[2, 3] q = {7, 8, -9, 10, 11, 12}> {
  e = Einsum <equation = "...ij,...jk"> (a, b)
  y = Add(e, x)
  dg = Einsum <equation = "ii->i"> (sq)
  d = Add(dg, x)
  iz = Einsum <equation = "ik, jk -> ij"> (p, q)
  z = Add(iz, i)
  tr = Einsum <equation = "ii"> (sq)
  t = Add(tr, x)
}
)");
  nlohmann::json report;
  auto out = foldOrShape(m, passes::createFoldPass({}), &report);
  INFO(report.dump());
  CHECK(report["folded"]["Einsum"] == 4);
  CHECK(opCounts(out).count("ai.onnx::Einsum") == 0);
  checkSameMaths(m, out);
  // Ellipses standing for different numbers of axes: ONNX (and so ONNX Runtime) refuses it; left alone.
  auto odd = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1] x) => (float[2, 4, 2, 5] y) <float[2, 1, 2, 3] a = {1.0, -2.0, 0.5, 3.0, 0.25, -1.0, 2.0, 1.5, -0.5, 0.0,
    4.0, 1.0},
                                         float[4, 3, 1] b = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1,
                                             1.2}> {
  e = Einsum <equation = "...ij,...jk"> (a, b)
  y = Add(e, x)
}
)");
  auto kept = foldOrShape(odd, passes::createFoldPass({}), &report);
  CHECK(opCounts(kept).count("ai.onnx::Einsum") == 1);
}

TEST_CASE("fold: results and weights over --max-bytes are left alone", "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x) => (float[64,64] y, float[2] z) <int64[2] big = {64, 64}, float[2] w = {1, 2}> {
  y = ConstantOfShape <value = float[1] {1.0}> (big)
  wt = Neg(w)
  z = Add(x, wt)
}
)");
  nlohmann::json report;
  auto out = foldOrShape(m, passes::createFoldPass({1024, true}), &report);
  CHECK(report["left_too_large"] == 1);
  CHECK(opCounts(out)["ai.onnx::ConstantOfShape"] == 1);
  CHECK(opCounts(out).count("ai.onnx::Neg") == 0);
  checkSameMaths(m, out);
}

TEST_CASE("fold: a large result is spilled to a file, not held in memory, and written whole", "[fold]") {
  // Concat on axis 1 of [20000, 1] weights: 4-byte rows, computed (not views: test_fold_stream.cpp).
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[20000, 2] x) => (float[20000, 2] z) {
  c = Concat <axis = 1> (a, b)
  z = Add(x, c)
}
)");
  std::string a = addFloatRamp(m, "a", 20000, 0.5f);
  std::string b = addFloatRamp(m, "b", 20000, -0.25f);
  std::string expected;
  for (size_t i = 0; i < a.size(); i += 4) expected += a.substr(i, 4) + b.substr(i, 4);
  for (auto& t : *m.mutable_graph()->mutable_initializer()) t.add_dims(1);
  nlohmann::json report;
  auto model = runPass(m, passes::createFoldPass({}), &report);
  CHECK(report["folded"]["Concat"] == 1);
  const Tensor* folded = nullptr;
  for (const auto& i : model->graph().initializers())
    if (i.tensor->elementCount() == 40000) folded = i.tensor.get();
  REQUIRE(folded);
  REQUIRE(folded->rawView());
  CHECK(folded->rawView()->owner->fd() >= 0);  // in the spill file
  CHECK(folded->proto().raw_data().empty());
  CHECK(folded->rawView()->copy() == expected);
  TempDir dir;
  writeModel(*model, (dir / "o.onnx").string());
  auto written = readProto(dir / "o.onnx");
  REQUIRE(written.graph().initializer_size() == 1);
  CHECK(written.graph().initializer(0).raw_data() == expected);
  checkSameMaths(m, written);
}

TEST_CASE("fold: integer overflow wraps as a runtime's does, MIN / -1 and division by zero are refused", "[fold]") {
  // int64 and int32: MAX + 1, MIN - 1, MAX * 2 and -MIN wrap (two's complement), never undefined behaviour.
  auto wraps = parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
g () => (int64[4] y, int32[1] z)
    <int64[4] a = {9223372036854775807, -9223372036854775807, 9223372036854775807, 5},
     int64[4] b = {1, -2, 2, 3}, int32[1] m = {-2147483648}> {
  s = Add (a, b)
  y = Mul (s, b)
  z = Neg (m)
}
)");
  auto folded = runPass(wraps, passes::createFoldPass({}));
  auto proto = toProto(*folded);
  REQUIRE(proto.graph().initializer_size() >= 2);
  std::map<std::string, std::vector<int64_t>> values;
  for (const auto& t : proto.graph().initializer()) {
    std::vector<int64_t> v;
    if (t.data_type() == onnx::TensorProto::INT64)
      for (size_t i = 0; i < t.raw_data().size() / 8; ++i) {
        int64_t x;
        std::memcpy(&x, t.raw_data().data() + 8 * i, 8);
        v.push_back(x);
      }
    if (t.data_type() == onnx::TensorProto::INT32)
      for (size_t i = 0; i < t.raw_data().size() / 4; ++i) {
        int32_t x;
        std::memcpy(&x, t.raw_data().data() + 4 * i, 4);
        v.push_back(x);
      }
    values[t.name()] = v;
  }
  const int64_t min64 = std::numeric_limits<int64_t>::min(), max64 = std::numeric_limits<int64_t>::max();
  // The sums and products modulo 2^64, as ONNX Runtime's kernels compute them on two's complement machines.
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const std::vector<int64_t> expected = {min64,  // (MAX + 1) * 1
                                         static_cast<int64_t>((u(-max64) + u(-2)) * u(-2)),  // (-MAX - 2) * -2
                                         static_cast<int64_t>((u(max64) + u(2)) * u(2)),  // (MAX + 2) * 2
                                         24};  // (5 + 3) * 3
  REQUIRE(values.count("y"));
  CHECK(values["y"] == expected);
  REQUIRE(values.count("z"));
  CHECK(values["z"] == std::vector<int64_t>{std::numeric_limits<int32_t>::min()});

  for (const char* type : {"int64", "int32"}) {
    std::string min = std::string(type) == "int64" ? "-9223372036854775808" : "-2147483648";
    auto overflow =
        parseModel("<ir_version: 8, opset_import: [\"\" : 17]>\ng () => (" + std::string(type) + "[1] y) <" + type +
                   "[1] a = {" + min + "}, " + type + "[1] b = {-1}> {\n  y = Div (a, b)\n}\n");
    try {
      runPass(overflow, passes::createFoldPass({}));
      FAIL("folded " << type << " MIN / -1");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::BadInput);
      CHECK_THAT(e.what(), Catch::Contains("integer overflow") && Catch::Contains("/ -1"));
    }
  }
}

TEST_CASE("fold refuses nodes that are not valid instead of writing inconsistent tensors", "[fold]") {
  struct Case {
    const char* body;
    const char* says;
  };
  const Case cases[] = {
      {"y = Transpose <perm = [0, 0]> (a)", "perm is not a permutation of 0..1 (0 repeated)"},
      {"y = Transpose <perm = [0, 5]> (a)", "(5 out of range)"},
      {"y = Unsqueeze (a, axes)", "Unsqueeze: axis 0 is given twice"},
      {"y = Range (start, nan, one)", "Range: start, limit and delta must be finite numbers"},
      {"y = Range (start, inf, one)", "Range: start, limit and delta must be finite numbers"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    auto m = parseModel(std::string(R"(
<ir_version: 8, opset_import: ["" : 13]>
g () => (float[?] y) <float[2, 3] a = {1, 2, 3, 4, 5, 6}, int64[2] axes = {0, 0}, float start = {0.0},
                      float one = {1.0}, float nan = {0.0}, float inf = {0.0}> {
  )") + c.body + "\n}\n");
    // NaN and infinity: the text syntax has no literal for them.
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
      if (t.name() == "nan") t.set_float_data(0, std::numeric_limits<float>::quiet_NaN());
      if (t.name() == "inf") t.set_float_data(0, std::numeric_limits<float>::infinity());
    }
    try {
      runPass(m, passes::createFoldPass({}));
      FAIL("folded");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::BadInput);
      CHECK_THAT(e.what(), Catch::Contains(c.says));
    }
  }
}

TEST_CASE("fold: Constants become initializers, Identity of an initializer is read through, equal results shared",
          "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y, int64[2] s) <float[3] w = {1.0, 2.0, 3.0}> {
  c = Constant <value = float[3] {0.5, 0.5, 0.5}> ()
  wi = Identity (w)
  a = Add (x, wi)
  b = Mul (a, c)
  two = Constant <value = int64[1] {2}> ()
  three = Constant <value = int64[1] {3}> ()
  s1 = Concat <axis = 0> (two, three)
  s2 = Constant <value = int64[2] {2, 3}> ()
  r1 = Reshape (b, s1)
  y = Reshape (r1, s2)
  s = Shape (y)
}
)");
  nlohmann::json report;
  auto out = foldOrShape(m, passes::createFoldPass({}), &report);
  INFO(report.dump());
  CHECK(report["identities_read_through"] == 1);
  CHECK(report["constants_to_initializers"] == 2);  // c and s2; two and three folded with the Concat
  CHECK(report["duplicates_shared"] == 1);  // s1 (folded) and s2 hold [2, 3]
  CHECK(countOp(out, "Constant") == 0);
  CHECK(countOp(out, "Identity") == 0);
  std::set<std::string> inits;
  for (const auto& t : out.graph().initializer()) inits.insert(t.name());
  CHECK(inits.count("w"));
  CHECK(inits.count("c"));
  CHECK(inits.count("s"));  // a graph output folded keeps its name
  checkSameMaths(m, out);
  // --no-share-duplicates keeps one per reader; --keep-parameters leaves the Identity and the Constant nodes.
  passes::FoldOptions apart;
  apart.shareDuplicates = false;
  foldOrShape(m, passes::createFoldPass(apart), &report);
  CHECK_FALSE(report.contains("duplicates_shared"));
  passes::FoldOptions keep;
  keep.keepParameters = true;
  auto kept = foldOrShape(m, passes::createFoldPass(keep), &report);
  CHECK(countOp(kept, "Identity") == 1);
  CHECK(kept.graph().initializer_size() == 1);
}

TEST_CASE("fold: to a fixpoint, types completed by each round (a chain of Reshapes of Shapes)", "[fold]") {
  // Each Reshape's shape is only known once the previous Shape folded: one round per link.
  std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\ng (float[2, 3, 4] x0) => (float[24] y) {\n";
  for (int i = 0; i < 24; ++i) {
    std::string x = "x" + std::to_string(i), s = "s" + std::to_string(i), n = "x" + std::to_string(i + 1);
    text += "  " + s + " = Shape (" + x + ")\n  " + n + " = Reshape (" + x + ", " + s + ")\n";
  }
  text += "  flat = Constant <value = int64[1] {-1}> ()\n  y = Reshape (x24, flat)\n}\n";
  auto m = parseModel(text);
  nlohmann::json report;
  auto out = foldOrShape(m, passes::createFoldPass({}), &report);
  INFO(report.dump());
  CHECK(report["rounds"].get<int>() > 16);  // more than the 16 rounds fold used to stop at
  CHECK(countOp(out, "Shape") == 0);
  checkSameMaths(m, out);
}

TEST_CASE("fold: a Gather or Slice of a partly known Shape folds when it selects known dimensions only", "[fold]") {
  auto m = parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 4, 6] x) => (float[batch, 24] y, int64[1] b) {
  s = Shape (x)
  one = Constant <value = int64[1] {1}> ()
  three = Constant <value = int64[1] {3}> ()
  zero = Constant <value = int64[1] {0}> ()
  hidden = Slice (s, one, three)
  batch = Gather <axis = 0> (s, zero)
  prod = ReduceProd <keepdims = 1> (hidden)
  minus = Constant <value = int64[1] {-1}> ()
  shape = Concat <axis = 0> (minus, prod)
  y = Reshape (x, shape)
  b = Identity (batch)
}
)");
  nlohmann::json report;
  auto out = foldOrShape(m, passes::createFoldPass({}), &report);
  INFO(report.dump());
  CHECK(report["folded"]["Slice of a partly known Shape"] == 1);  // dimensions 1 and 2: known
  CHECK_FALSE(report["folded"].contains("Gather of a partly known Shape"));  // the batch: unknown, stays
  CHECK(countOp(out, "Reshape") == 1);
  CHECK(countOp(out, "Concat") == 0);  // [-1, 24] is a constant now
  CHECK(countOp(out, "Gather") == 1);
  checkSameMaths(m, out);
}
