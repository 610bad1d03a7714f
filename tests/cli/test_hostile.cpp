// Hostile input on the surfaces the newer passes added (issue 24): pattern
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
  for (int i = 0; i < proto.graph().node_size(); ++i) proto.mutable_graph()->mutable_node(i)->set_name("n" + std::to_string(i));
  proto.mutable_graph()->mutable_node(1)->set_name(relu);
  graphrw::test::writeProto(proto, dir / "m.onnx");
  return dir / "m.onnx";
}

// A rule file replacing every Relu by this template.
fs::path templateRule(const fs::path& dir, const std::string& body, int opset = 14) {
  std::string text = "<domain: \"t\", opset_import: [\"\" : " + std::to_string(opset) + "]>\nT (x) => (y) {\n" + body + "\n}\n";
  json rules = {{"version", 1},
                {"passes", json::array({{{"pass", "replace"},
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
    auto r = runChecked("checkpoint " + q(m) + " --after 'name_regex=" + re + "' --allow-no-match -o " + q(dir / "o.onnx"), dir / "o.onnx");
    CHECK(r.status == 0);
  }
  auto backref = runChecked("checkpoint " + q(m) + " --after 'name_regex=(a)\\1' -o " + q(dir / "o.onnx"), dir / "o.onnx");
  CHECK(backref.status == 2);
  auto longRegex = runChecked("checkpoint " + q(m) + " --after 'name_regex=" + std::string(5000, 'a') + "' -o " + q(dir / "o.onnx"), dir / "o.onnx");
  CHECK(longRegex.status == 2);
  CHECK_THAT(longRegex.err, Catch::Contains("at most 1000"));
  auto slashes = reluModel(dir.path(), std::string(200000, '/') + "x");
  auto r = runChecked("checkpoint " + q(slashes) + " --after 'scope=/enc/*' --allow-no-match -o " + q(dir / "o.onnx"), dir / "o.onnx");
  CHECK(r.status == 0);
}

TEST_CASE("hostile: template text with a 100k identifier, 500k blanks, 5000 nested Ifs, malformed numbers", "[cli][hostile]") {
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
      body = "y = If (c) <then_branch = t" + std::to_string(i) + " () => (float[1] y) { " + body + " }, else_branch = e" +
             std::to_string(i) + " () => (float[1] y) { y = Identity (x) }>";
    auto p = graphrw::test::parseModel("<ir_version: 8, opset_import: [\"\" : 14]>\ng (float[1] x, bool c) => (float[1] y) {\n  " +
                                       body + "\n}\n");
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
