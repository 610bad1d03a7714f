// Hostile input on the surfaces the newer passes added: pattern
// and template text, selectors on crafted names, nesting, numbers, option
// values. Every case ends in seconds with a documented exit code and a
// one-line error, or in exit 0 with an output validate accepts.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "models.h"
#include "support.h"

namespace fs = std::filesystem;
using graphrw::test::run;
using graphrw::test::writeFile;
using nlohmann::json;

namespace {

std::string bin() { return graphrw::test::graphrwBin(); }
std::string q(const fs::path& p) { return "'" + p.string() + "'"; }
size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// x -> MatMul -> Relu -> Add, nodes n0, n1, n2; `relu` renames the Relu.
fs::path reluModel(const fs::path& dir, const std::string& relu = "n1") {
  auto proto = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2,4] x) => (float[2,4] y) <float[4,4] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}> {
  m = MatMul (x, w)
  r = Relu (m)
  y = Add (r, x)
}
)");
  for (int i = 0; i < proto.graph().node_size(); ++i)
    proto.mutable_graph()->mutable_node(i)->set_name("n" + std::to_string(i));
  proto.mutable_graph()->mutable_node(1)->set_name(relu);
  graphrw::test::writeProto(proto, dir / "m.onnx");
  return dir / "m.onnx";
}

// A rule file replacing every Relu by this template.
fs::path templateRule(const fs::path& dir, const std::string& body, int opset = 14) {
  std::string text =
      "<domain: \"t\", opset_import: [\"\" : " + std::to_string(opset) + "]>\nT (x) => (y) {\n" + body + "\n}\n";
  json rules = {
      {"version", 1},
      {"passes",
       json::array({{{"pass", "replace"},
                     {"replacements", json::array({{{"select", {{"op_type", "Relu"}}}, {"template", text}}})}}})}};
  writeFile(dir / "r.json", rules.dump());
  return dir / "r.json";
}

// Runs graphrw; the output, when exit 0, must pass validate.
graphrw::test::RunResult runChecked(const std::string& args, const fs::path& out) {
  auto r = run(bin() + " " + args);
  INFO(r.err);
  CHECK(r.status != 70);
  CHECK(r.status < 128);  // no signal
  if (r.status == 0 && fs::exists(out)) CHECK(run(bin() + " validate " + q(out)).status == 0);
  if (r.status != 0) CHECK(lines(r.err) == 1);
  return r;
}

}  // namespace

TEST_CASE("hostile: selectors on a 200k-character node name and a name of 200k '/'", "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto m = reluModel(dir.path(), std::string(200000, 'a'));
  for (const char* re : {"a*", "(a|b)*c?", ".*x", "(a*)*b"}) {
    INFO(re);
    auto r =
        runChecked("checkpoint " + q(m) + " --after 'name_regex=" + re + "' --allow-no-match -o " + q(dir / "o.onnx"),
                   dir / "o.onnx");
    CHECK(r.status == 0);
  }
  auto backref =
      runChecked("checkpoint " + q(m) + " --after 'name_regex=(a)\\1' -o " + q(dir / "o.onnx"), dir / "o.onnx");
  CHECK(backref.status == 2);
  auto longRegex =
      runChecked("checkpoint " + q(m) + " --after 'name_regex=" + std::string(5000, 'a') + "' -o " + q(dir / "o.onnx"),
                 dir / "o.onnx");
  CHECK(longRegex.status == 2);
  CHECK_THAT(longRegex.err, Catch::Contains("at most 1000"));
  auto slashes = reluModel(dir.path(), std::string(200000, '/') + "x");
  auto r = runChecked("checkpoint " + q(slashes) + " --after 'scope=/enc/*' --allow-no-match -o " + q(dir / "o.onnx"),
                      dir / "o.onnx");
  CHECK(r.status == 0);
}

TEST_CASE("hostile: template text with a 100k identifier, 500k blanks, 5000 nested Ifs, malformed numbers",
          "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto m = reluModel(dir.path());
  auto out = dir / "o.onnx";
  auto replace = [&](const std::string& body, int opset = 14) {
    return runChecked("run " + q(templateRule(dir.path(), body, opset)) + " " + q(m) + " -o " + q(out), out);
  };
  CHECK(replace("  y = LeakyRelu <alpha = @" + std::string(100000, 'a') + "> (x)").status == 2);  // no such formal
  CHECK(replace("  y = LeakyRelu <alpha =" + std::string(500000, ' ') + "@k> (x)").status == 2);
  std::string nest = "y = Identity(x)";
  for (int i = 0; i < 5000; ++i)
    nest = "y = If (c) <then_branch = g" + std::to_string(i) + " () => (y) { " + nest + " }, else_branch = h" +
           std::to_string(i) + " () => (y) { y = Identity(x) }>";
  auto deep = replace("  c = Constant <value = bool {1}> ()\n  " + nest);
  CHECK(deep.status == 2);
  CHECK_THAT(deep.err, Catch::Contains("nests brackets more than 16 deep"));
  for (const char* bad : {"  y = Unsqueeze <axes = [-q]> (x)", "  y = LeakyRelu <alpha = 1e999> (x)",
                          "  y = Unsqueeze <axes = [99999999999999999999]> (x)"}) {
    INFO(bad);
    auto r = replace(bad, 11);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("does not parse"));
  }
  // `@` inside a string or a comment is text, not a reference.
  auto quoted = replace("  # alpha = @a is a comment\n  y = Identity (x)");
  CHECK(quoted.status == 0);
}

TEST_CASE("hostile: graphrw never writes a model nested deeper than it reads back", "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto nested = [&](int levels) {
    std::string body = "y = Identity (x)";
    for (int i = 0; i < levels; ++i)
      body = "y = If (c) <then_branch = t" + std::to_string(i) + " () => (float[1] y) { " + body +
             " }, else_branch = e" + std::to_string(i) + " () => (float[1] y) { y = Identity (x) }>";
    auto p = graphrw::test::parseModel(
        "<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[1] x, bool c) => (float[1] y) {\n  " + body + "\n}\n");
    auto path = dir / ("n" + std::to_string(levels) + ".onnx");
    graphrw::test::writeProto(p, path);
    return path;
  };
  auto ok = runChecked("convert " + q(nested(30)) + " -o " + q(dir / "o30.onnx"), dir / "o30.onnx");
  CHECK(ok.status == 0);
  auto deep = runChecked("convert " + q(nested(31)) + " -o " + q(dir / "o31.onnx"), dir / "o31.onnx");
  CHECK(deep.status == 5);
  CHECK_THAT(deep.err, Catch::Contains("nested more than 30 deep"));
  CHECK_FALSE(fs::exists(dir / "o31.onnx"));
}

TEST_CASE("hostile: a model read from a device or a pipe stops at protobuf's 2 GiB", "[cli][hostile]") {
  // /dev/zero never ends: without the cap the spool grows until the disk is full.
  auto r = runChecked("inspect /dev/zero", "");
  CHECK(r.status == 3);
  CHECK_THAT(r.err, Catch::Contains("/dev/zero: larger than 2147483647 bytes"));
  auto piped = run("head -c 2147483648 /dev/zero | " + bin() + " inspect -");
  CHECK(piped.status == 3);
  CHECK_THAT(piped.err, Catch::Contains("<stdin>: larger than"));
}

namespace {

std::string fn(const std::string& name, const std::string& sig, const std::string& body,
               const std::string& imports = "\"\" : 14") {
  return "<domain: \"p\", opset_import: [" + imports + "]>\n" + name + " " + sig + " {\n" + body + "\n}\n";
}

// A {"rules": [...]} file with one rule.
fs::path patternRules(const fs::path& dir, json rule) {
  writeFile(dir / "p.json", json{{"rules", json::array({std::move(rule)})}}.dump());
  return dir / "p.json";
}

}  // namespace

TEST_CASE("hostile: every template is checked on its own when the rule file is read", "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto m = reluModel(dir.path());
  auto out = dir / "o.onnx";
  std::string match = fn("M", "(x) => (y)", "  y = Relu (x)");
  struct Case {
    std::string replace, says;
  };
  const Case cases[] = {
      {fn("R", "(x) => (y)", "  y = Rleu (x)"), "no such op in ai.onnx at version 14 (did you mean 'Relu'?)"},
      {fn("R", "(x) => (y)", "  y = Add (x)"), "has input size 1 not in range [min=2, max=2]"},
      {fn("R", "(x) => (y)", "  y = foo.Bar <alpha = @x> (x)"), "imports no opset for domain 'foo'"},
      {fn("R", "(x) => (y)", "  y = Relu (z)"),
       "reads 'z', which is neither an input of the template nor produced by a node"},
      {fn("R", "(x) => (x)", "  y = Relu (x)"), "output 'x' is also an input"},
      {fn("R", "(x) => (y)", "  a = Relu (b)\n  b = Relu (a)\n  y = Relu (a)"), "is on a cycle"},
      {fn("R", "(x) => (y)", "  y = Relu (x)\n  y = Relu (x)"), "value 'y' is produced twice"},
      {fn("R", "(x) => (y)", "  c = Constant <value = float[2,2] {1,2}> ()\n  y = Add (x, c)"),
       "float_data holds 2 elements, its dims [2,2] say 4"},
      {fn("R", "(x) => (y)",
          "  c = Constant <value = bool {1}> ()\n  y = If (c) <then_branch = g () => (z) { z = LeakyRelu <alpha = @x> "
          "(x) }, "
          "else_branch = h () => (z) { z = Identity (x) }>"),
       "inside a subgraph"},
      {fn("R", "(x) => (y)", "  y = LeakyRelu <alpah = 0.1> (x)"), "Unrecognized attribute: alpah"},
  };
  for (const auto& c : cases) {
    INFO(c.replace);
    auto r = runChecked("pattern " + q(m) + " --rules " +
                            q(patternRules(dir.path(), {{"match", match}, {"replace", c.replace}})) + " -o " + q(out),
                        out);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("/rules/0/replace") && Catch::Contains(c.says));
    CHECK_FALSE(fs::exists(out));
  }
  // The match is checked too (attributes it leaves out match any value, so only names and arity).
  auto typo =
      runChecked("pattern " + q(m) + " --rules " +
                     q(patternRules(dir.path(), {{"match", fn("M", "(x) => (y)", "  y = LeakyRelu <alpah = 0.1> (x)")},
                                                 {"replace", fn("R", "(x) => (y)", "  y = Relu (x)")}})) +
                     " -o " + q(out),
                 out);
  CHECK(typo.status == 2);
  CHECK_THAT(typo.err,
             Catch::Contains("/rules/0/match") && Catch::Contains("no attribute 'alpah' (did you mean 'alpha'?)"));
  auto cast = runChecked("pattern " + q(m) + " --rules " +
                             q(patternRules(dir.path(), {{"match", fn("M", "(x) => (y)", "  y = Cast (x)")},
                                                         {"replace", fn("R", "(x) => (y)", "  y = Relu (x)")},
                                                         {"allow_no_match", true}})) +
                             " -o " + q(out),
                         out);
  CHECK(cast.status == 0);  // Cast's required `to` left out: any Cast; it matches nothing here
  // The same checks through a replace rule file, before the model is read (it does not exist).
  auto before = runChecked(
      "run " + q(templateRule(dir.path(), "  y = Rleu (x)")) + " " + q(dir / "missing.onnx") + " -o " + q(out), out);
  CHECK(before.status == 2);
  CHECK_THAT(before.err, Catch::Contains("did you mean 'Relu'?"));
}

TEST_CASE("hostile: --rules files are schema-checked like rule files", "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto m = reluModel(dir.path());
  auto out = dir / "o.onnx";
  json rule = {{"match", fn("M", "(x) => (y)", "  y = Relu (x)")},
               {"replace", fn("R", "(x) => (y)", "  y = Relu (x)")}};
  auto with = [&](const char* key, json value) {
    json r = rule;
    r[key] = std::move(value);
    return json{{"rules", json::array({r})}};
  };
  const std::pair<json, std::string> cases[] = {
      {with("commutative", "yes"), "/rules/0/commutative: must be a boolean"},
      {with("weights", 5), "/rules/0/weights: must be an array"},
      {json{{"version", 1},
            {"passes", json::array({{{"pass", "pattern"}, {"rules", json::array({rule})}, {"allow_no_match", "x"}}})}},
       "/passes/0/allow_no_match: must be a boolean"},
      {json{{"version", 1}, {"passes", json::array({{{"pass", 5}}})}}, "is not JSON of the form"},
  };
  for (const auto& [doc, says] : cases) {
    INFO(doc.dump());
    writeFile(dir / "r.json", doc.dump());
    auto r = runChecked("pattern " + q(m) + " --rules " + q(dir / "r.json") + " -o " + q(out), out);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
  }
}

TEST_CASE("hostile: a constant that gives an attribute must fit it", "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto rules = patternRules(dir.path(), {{"match", fn("M", "(x, k) => (y)", "  y = Add (x, k)")},
                                         {"replace", fn("R", "(x, k) => (y)", "  y = Softmax <axis = @k> (x)")}});
  auto model = [&](const std::string& value) {
    // The text syntax has no literal for NaN: it is set afterwards.
    auto p = graphrw::test::parseModel(
        "<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[2] x) => (float[2] y) <float k = {" +
        (value == "nan" ? std::string("0.0") : value) + "}> {\n  y = Add (x, k)\n}\n");
    if (value == "nan")
      p.mutable_graph()->mutable_initializer(0)->set_float_data(0, std::numeric_limits<float>::quiet_NaN());
    graphrw::test::writeProto(p, dir / "k.onnx");
    return dir / "k.onnx";
  };
  auto out = dir / "o.onnx";
  for (const char* bad : {"nan", "1e30", "2.5"}) {
    INFO(bad);
    auto r = runChecked("pattern " + q(model(bad)) + " --rules " + q(rules) + " -o " + q(out), out);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("not an integer an INT attribute can hold"));
  }
  CHECK(runChecked("pattern " + q(model("0.0")) + " --rules " + q(rules) + " -o " + q(out), out).status == 0);
}

TEST_CASE("hostile: numbers in options are strict: integers, in range, overflow named", "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto p = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[b, 4] x) => (float[b, 4] y, int64[3] zs) <int64[3] s = {1048576, 1048576, 1024}> {
  z = ConstantOfShape (s)
  zs = Shape (z)
  y = Relu (x)
}
)");
  graphrw::test::writeProto(p, dir / "m.onnx");
  auto m = dir / "m.onnx";
  auto out = dir / "o.onnx";
  const std::pair<std::string, std::string> cases[] = {
      {"--dim b=abc", "must be an integer, not string"},
      {"--dim b=true", "must be an integer, not boolean"},
      {"--dim 'b=[1]'", "must be an integer, not array"},
      {"--dim b=", "must be an integer, not string"},
      {"--dim b=3.5", "must be an integer, not number"},
      {"--dim b=99999999999999999999", "is too large for a 64-bit integer"},
      {"--dim b=0", "must be at least 1"},
      {"--input x=0,4", "must be at least 1"},
      {"--dim b=1 --dim b=2", "'b' is given twice"},
  };
  for (const auto& [args, says] : cases) {
    INFO(args);
    auto r = runChecked("set-shapes " + q(m) + " " + args + " -o " + q(out), out);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
  }
  auto ipus = runChecked("place " + q(m) + " --ipus 9223372036854775807 -o " + q(out), out);
  CHECK(ipus.status == 2);
  CHECK_THAT(ipus.err, Catch::Contains("must be at most 1023"));
  // 4 PiB of zeros allowed by --max-bytes: more than the machine has, so the node stays.
  auto fold = runChecked("fold " + q(m) + " --max-bytes 9223372036854775807 -o " + q(out), out);
  CHECK(fold.status == 0);
}

TEST_CASE("hostile: validate refuses a tensor whose data disagrees with its dims", "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto p = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2, 2] x) => (float[2, 2] y) <float[4] w = {1, 2, 3, 4}> {
  c = Constant <value = float[2] {1, 2}> ()
  a = Add (x, w)
  y = Add (a, c)
}
)");
  p.mutable_graph()->mutable_initializer(0)->mutable_float_data()->Truncate(2);
  graphrw::test::writeProto(p, dir / "w.onnx");
  auto r = run(bin() + " validate " + q(dir / "w.onnx"));
  CHECK(r.status == 1);
  CHECK_THAT(r.out + r.err, Catch::Contains("initializer 'w': float_data holds 2 elements, its dims [4] say 4"));
  p = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 14]>
g (float[2] x) => (float[2] y) {
  c = Constant <value = float[2] {1, 2}> ()
  y = Add (x, c)
}
)");
  p.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t()->set_raw_data(std::string(6, '\0'));
  p.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t()->clear_float_data();
  graphrw::test::writeProto(p, dir / "c.onnx");
  auto c = run(bin() + " validate " + q(dir / "c.onnx"));
  CHECK(c.status == 1);
  CHECK_THAT(c.out + c.err,
             Catch::Contains("attribute 'value': raw_data holds 6 bytes, not a whole number of float elements"));
}

TEST_CASE("hostile: a single-value option given twice, non-finite tolerances, a NaN on one side of compare",
          "[cli][hostile]") {
  graphrw::test::TempDir dir;
  auto nan = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) {
  a = Abs (x)
  m = Neg (a)
  y = Sqrt (m)
}
)");
  auto abs = graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) { y = Abs (x) }
)");
  graphrw::test::writeProto(nan, dir / "nan.onnx");
  graphrw::test::writeProto(abs, dir / "abs.onnx");
  const auto a = q(dir / "nan.onnx"), b = q(dir / "abs.onnx");
  auto out = dir / "o.onnx";
  const std::pair<std::string, std::string> twice[] = {
      {"legalize " + b + " --gelu tanh --gelu erf -o " + q(out), "--gelu is given 2 times; it takes one value"},
      {"validate " + b + " --target popart --target popart", "--target is given 2 times"},
      {"expand " + b + " -o " + q(out) + " -o " + q(dir / "p.onnx"), "--output is given 2 times"},
      {"compare " + a + " " + b + " --seed 1 --seed 2", "--seed is given 2 times"},
  };
  for (const auto& [args, says] : twice) {
    INFO(args);
    auto r = run(bin() + " " + args);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
  }
  CHECK_FALSE(fs::exists(out));
  for (const char* bad : {"--rtol nan", "--rtol inf", "--atol -nan", "--rtol=-1", "--atol 1e999"}) {
    INFO(bad);
    auto r = run(bin() + " compare " + a + " " + b + " " + bad);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("must be a finite number >= 0"));
  }
  // Sqrt of a negative number on one side: a difference, not an internal error.
  auto differ = run(bin() + " compare " + a + " " + b + " --json");
  CHECK(differ.status == 1);
  auto report = nlohmann::json::parse(differ.out);
  CHECK(report["ok"] == false);
  CHECK(report["outputs"][0]["within"] == false);
  // numpy.allclose: NaN against NaN agrees only with --equal-nan; the NaNs are counted.
  auto both = run(bin() + " compare " + a + " " + a);
  CHECK(both.status == 1);
  CHECK_THAT(both.out, Catch::Contains("NaN 4 in A, 4 in B") && Catch::Contains("4 of 4 elements outside"));
  CHECK(run(bin() + " compare " + a + " " + a + " --equal-nan").status == 0);
}
