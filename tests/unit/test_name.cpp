#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "io/loader.h"
#include "ir/inliner.h"
#include "ir/ir.h"
#include "ir/name.h"
#include "ir/rewriter.h"
#include "ir/verifier.h"
#include "models.h"
#include "support.h"

using namespace graphrw;
using ir::Name;
using ir::NameArena;

TEST_CASE("a name arena keeps every name's text where it was made", "[name]") {
  NameArena arena;
  std::vector<std::string> texts;
  std::vector<Name> names;
  // Enough to fill several chunks (4 KB doubling to 1 MB).
  for (int i = 0; i < 200000; ++i) {
    texts.push_back("/blocks." + std::to_string(i) + "/t" + std::to_string(i % 20));
    names.push_back(arena.make(texts.back()));
  }
  std::vector<const char*> first;
  for (const Name& n : names) first.push_back(n.view().data());
  names.push_back(arena.make(std::string(3 << 20, 'x')));  // longer than any chunk: a chunk of its own
  for (size_t i = 0; i < texts.size(); ++i) {
    CHECK(names[i].view() == texts[i]);
    CHECK(names[i].view().data() == first[i]);  // never moved
    CHECK(std::strcmp(names[i].c_str(), texts[i].c_str()) == 0);  // '\0'-terminated
  }
  CHECK(names.back().size() == (3u << 20));
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size() + 2;  // a length byte and '\0'
  CHECK(arena.used() == bytes + (3u << 20) + 6);  // 255, a 4-byte length, '\0'
  CHECK(arena.capacity() >= arena.used());
  CHECK(arena.capacity() < arena.used() + (2u << 20));  // at most about a chunk and a half unused
}

TEST_CASE("names of 254 bytes and more keep their length", "[name]") {
  NameArena arena;
  for (size_t size : {1u, 127u, 128u, 254u, 255u, 256u, 65536u, 70001u}) {
    std::string text(size, 'a');
    text.back() = 'z';
    Name n = arena.make(text);
    CHECK(n.size() == size);
    CHECK(n.view() == text);
    CHECK(std::strlen(n.c_str()) == size);
  }
}

TEST_CASE("a name made again shares the recent copy", "[name]") {
  NameArena arena;
  Name a = arena.make("callee/t4");
  size_t used = arena.used();
  Name b = arena.make(std::string("callee/") + "t4");
  CHECK(b.view().data() == a.view().data());
  CHECK(arena.used() == used);
  // 50,000 copies of a 40-name body take about one body's bytes.
  std::vector<std::string> body;
  for (int i = 0; i < 40; ++i) body.push_back("callee/t" + std::to_string(i));
  for (int copy = 0; copy < 50000; ++copy)
    for (const auto& t : body) CHECK(arena.make(t) == t);
  CHECK(arena.used() < used + 40 * 64);
}

TEST_CASE("the empty name takes nothing and reads as \"\"", "[name]") {
  NameArena arena;
  Name e = arena.make("");
  CHECK(e.empty());
  CHECK(e.view().empty());
  CHECK(std::string(e.c_str()).empty());
  CHECK(e == Name());
  CHECK(arena.used() == 0);
  CHECK(arena.capacity() == 0);
}

TEST_CASE("names compare, join and print as their text", "[name]") {
  NameArena arena;
  Name a = arena.make("/layer.0/MatMul"), b = arena.make("/layer.0/MatMul"), c = arena.make("/layer.1/Add");
  CHECK(a == b);  // equal text in two places
  CHECK(a != c);
  CHECK(a == "/layer.0/MatMul");
  CHECK("/layer.0/MatMul" == a);
  CHECK(a == std::string("/layer.0/MatMul"));
  CHECK(a < c);
  CHECK(c > "/layer.0");
  CHECK("node '" + a + "'" == "node '/layer.0/MatMul'");
  CHECK(std::string("x") + c == "x/layer.1/Add");
  CHECK(a + "/out" == "/layer.0/MatMul/out");
  CHECK(a + std::string("_1") == "/layer.0/MatMul_1");
  CHECK(a + c == "/layer.0/MatMul/layer.1/Add");
  CHECK(a + '_' == "/layer.0/MatMul_");
  std::string s = "in ";
  s += a;
  CHECK(s == "in /layer.0/MatMul");
  std::ostringstream os;
  os << c;
  CHECK(os.str() == "/layer.1/Add");
  std::unordered_set<Name> set{a, b, c};
  CHECK(set.size() == 2);
}

TEST_CASE("a view of a value's name stays readable after a rename", "[name]") {
  auto model = loadModel(test::parseModel(test::kNegModel));
  ir::Graph& g = model->graph();
  ir::Rewriter rw(*model);
  ir::Value* y = g.findLocal("Y");
  std::string_view oldY = y->name();
  rw.renameValue(y, "Y2");
  CHECK(y->name() == "Y2");
  CHECK(oldY == "Y");  // the old text is still in the arena
  CHECK(g.findLocal("Y2") == y);
  CHECK(g.findLocal("Y") == nullptr);
}

TEST_CASE("a body inlined from another model copies its names into the target's arena", "[name]") {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
main (float[2] X) => (float[2] Y) {
  Y = local.Twice (X)
}
<domain: "local", opset_import: ["" : 17]>
Twice (x) => (y) {
  an_inner_value_with_a_long_name = Neg (x)
  y = Neg (an_inner_value_with_a_long_name)
}
)";
  auto source = loadModel(test::parseModel(text));
  auto target = loadModel(test::parseModel(text));
  ir::Node* call = target->graph().nodes().front().get();
  {
    ir::Rewriter rw(*target);
    // No prefix: the copies' names are the body's own text.
    inlineBody(rw, call, source->findFunction("local", "Twice")->body(), AttributeEnv::of(*call),
               "");  // erases the call
  }
  source.reset();  // a handle into its arena would now dangle (AddressSanitizer sees a read)
  ir::Value* inner = target->graph().findLocal("an_inner_value_with_a_long_name");
  REQUIRE(inner);
  CHECK(inner->name() == "an_inner_value_with_a_long_name");
  CHECK(target->nameText().owns(inner->name()));
  CHECK(inner->producer()->name() == "Neg");
  CHECK(verify(*target).empty());
}
