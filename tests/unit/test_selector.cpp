#include <catch2/catch.hpp>

#include "io/loader.h"
#include "pass/selector.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;

namespace {

std::unique_ptr<ir::Model> namedModel() {
  auto proto = test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17, "f" : 1]>
main (float[4] X) => (float[4] Y) {
  a = Relu (X)
  b = f.Layer (a)
  c = Neg (b)
  Y = Abs (c)
}
)");
  const char* names[] = {"/layers.0/attention/Relu", "/layers.0/mlp", "/layers.12/attention/Neg", "/head/Abs"};
  for (int i = 0; i < 4; ++i) proto.mutable_graph()->mutable_node(i)->set_name(names[i]);
  return loadModel(proto);
}

std::vector<std::string> matching(ir::Model& m, const std::string& sel) {
  auto s = Selector::parse(sel);
  std::vector<std::string> out;
  for (const auto& n : m.graph().nodes())
    if (s.matches(*n)) out.push_back(n->name().str());
  return out;
}

}  // namespace

TEST_CASE("selector keys", "[selector]") {
  auto m = namedModel();
  CHECK(matching(*m, "op_type=Layer") == std::vector<std::string>{"/layers.0/mlp"});
  CHECK(matching(*m, "op_type=Layer,domain=f").size() == 1);
  CHECK(matching(*m, "op_type=Layer,domain=g").empty());
  CHECK(matching(*m, "domain=ai.onnx").size() == 3);  // "" and ai.onnx are one domain
  CHECK(matching(*m, "domain=").size() == 3);
  CHECK(matching(*m, "name=/layers.0/*") == std::vector<std::string>{"/layers.0/attention/Relu", "/layers.0/mlp"});
  CHECK(matching(*m, "name=/head/Abs") == std::vector<std::string>{"/head/Abs"});
  CHECK(matching(*m, "name_regex=/layers\\.[0-9]+/attention/.*").size() == 2);
  CHECK(matching(*m, "name_regex=attention").empty());  // whole-name match
}

TEST_CASE("scope: '*' does not cross '/', each prefix is a block", "[selector]") {
  auto m = namedModel();
  auto s = Selector::parse("scope=/layers.*/");
  CHECK(s.scopeOf("/layers.0/attention/Relu") == "/layers.0/");
  CHECK(s.scopeOf("/layers.12/attention/Neg") == "/layers.12/");
  CHECK_FALSE(s.scopeOf("/head/Abs").has_value());
  CHECK(matching(*m, "scope=/layers.*/").size() == 3);
  auto deeper = Selector::parse("scope=/layers.*/attention");
  CHECK(deeper.scopeOf("/layers.0/attention/Relu") == "/layers.0/attention");
  CHECK_FALSE(deeper.scopeOf("/layers.0/mlp").has_value());
  CHECK_FALSE(Selector::parse("scope=/*/").scopeOf("nameless").has_value());
}

TEST_CASE("bad selectors are usage errors naming the problem", "[selector][errors]") {
  auto error = [](const std::string& text) {
    try {
      Selector::parse(text);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::Usage);
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  CHECK_THAT(error("op_typo=X"), Catch::Contains("unknown key 'op_typo'"));
  CHECK_THAT(error("op_type"), Catch::Contains("not key=value"));
  CHECK_THAT(error("name=[abc"), Catch::Contains("unclosed '['"));
  CHECK_THAT(error("name_regex=(a"), Catch::Contains("not a valid regex"));
  CHECK_THAT(error("op_type=A,op_type=B"), Catch::Contains("given twice"));
  CHECK_THAT(error("op_type="), Catch::Contains("op_type is empty"));
}
