#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "io/loader.h"
#include "ir/ir.h"
#include "ir/rewriter.h"
#include "support.h"

using graphrw::ir::InlineOneVector;
using graphrw::ir::SharedAttributeProto;

static_assert(sizeof(graphrw::ir::Node::AttributeList) == sizeof(std::vector<graphrw::ir::Attribute>),
              "one attribute in place, in 24 bytes");
static_assert(sizeof(SharedAttributeProto) == sizeof(void*), "one pointer per holder");

namespace {
std::vector<int> values(const InlineOneVector<std::unique_ptr<int>>& v) {
  std::vector<int> out;
  for (const auto& p : v) out.push_back(*p);
  return out;
}
}  // namespace

TEST_CASE("inline-one vector: one element in place, more on the heap, kept in order", "[attribute_storage]") {
  InlineOneVector<std::unique_ptr<int>> v;  // a move-only element with a destructor: ASan sees leaks and double frees
  CHECK(v.empty());
  CHECK(v.capacity() == 1);
  v.push_back(std::make_unique<int>(1));
  CHECK(v.capacity() == 1);  // in place
  CHECK(values(v) == std::vector<int>{1});
  v.push_back(std::make_unique<int>(2));
  v.push_back(std::make_unique<int>(3));
  CHECK(v.capacity() == 4);
  CHECK(values(v) == std::vector<int>{1, 2, 3});
  auto next = v.erase(v.begin());
  CHECK(**next == 2);
  CHECK(values(v) == std::vector<int>{2, 3});
  v.erase(v.end() - 1);
  CHECK(values(v) == std::vector<int>{2});

  InlineOneVector<std::unique_ptr<int>> moved(std::move(v));  // takes the heap block
  CHECK(v.empty());
  CHECK(v.capacity() == 1);
  CHECK(values(moved) == std::vector<int>{2});
  InlineOneVector<std::unique_ptr<int>> one;
  one.push_back(std::make_unique<int>(7));
  moved = std::move(one);  // an inline element moves over a heap list, which is freed
  CHECK(values(moved) == std::vector<int>{7});
  CHECK(moved.capacity() == 1);
  CHECK(one.empty());
  moved.erase(moved.begin());
  CHECK(moved.empty());
  moved.reserve(3);
  CHECK(moved.capacity() == 3);
  for (int i = 0; i < 5; ++i) moved.push_back(std::make_unique<int>(i));
  CHECK(values(moved) == std::vector<int>{0, 1, 2, 3, 4});
  moved.clear();
  CHECK(moved.empty());

  // Two elements: a block from the pair pool, moved whole and given back.
  InlineOneVector<std::unique_ptr<int>> pair;
  pair.reserve(2);
  CHECK(pair.capacity() == 2);
  pair.push_back(std::make_unique<int>(8));
  pair.push_back(std::make_unique<int>(9));
  InlineOneVector<std::unique_ptr<int>> taken(std::move(pair));
  CHECK(taken.capacity() == 2);
  CHECK(values(taken) == std::vector<int>{8, 9});
  taken = InlineOneVector<std::unique_ptr<int>>();
  CHECK(taken.empty());
  CHECK(taken.capacity() == 1);
}

TEST_CASE("a shared attribute proto is copied before a change while another holder reads it", "[attribute_storage]") {
  onnx::AttributeProto p;
  p.set_name("axis");
  p.set_i(1);
  SharedAttributeProto a(p);
  CHECK_FALSE(a.shared());
  SharedAttributeProto b = a;
  CHECK(a.shared());
  CHECK(&*a == &*b);
  {
    SharedAttributeProto c = b;
    SharedAttributeProto d = std::move(c);
    CHECK_FALSE(c);
  }
  b = SharedAttributeProto();
  CHECK_FALSE(a.shared());
  a.mutableRef().set_i(2);
  CHECK((*a).i() == 2);
}

TEST_CASE("nodes with none, one and several attributes: set, rename, remove and copy on write", "[attribute_storage]") {
  auto model = graphrw::loadModel(graphrw::test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 17]>
main (float[2,3] X) => (float[3,2] Y, float[2,3] Z) {
  Y = Transpose <perm = [1, 0]> (X)
  Z = Transpose <perm = [0, 1]> (X)
}
)"));
  auto& g = model->graph();
  graphrw::ir::Node* y = g.findLocal("Y")->producer();
  graphrw::ir::Node* z = g.findLocal("Z")->producer();
  CHECK(y->attributes().size() == 1);
  graphrw::ir::Rewriter rw(*model);
  auto intAttr = [](const std::string& name, int64_t v) {
    onnx::AttributeProto a;
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(v);
    return a;
  };
  for (int k = 0; k < 4; ++k) rw.setAttribute(y, intAttr("__k" + std::to_string(k), k));  // in place, then the heap
  rw.setAttribute(z, intAttr("__k0", 0));  // the same value: one proto for both nodes
  CHECK(y->attributes().size() == 5);
  CHECK(&y->attribute("__k0")->proto() == &z->attribute("__k0")->proto());
  CHECK(rw.renameAttribute(y, "__k0", "__renamed"));  // copied first: z keeps its name
  CHECK(z->attribute("__k0") != nullptr);
  CHECK(y->attribute("__renamed")->proto().i() == 0);
  CHECK(rw.removeAttribute(y, "perm"));
  std::vector<std::string> names;
  for (const auto& a : y->attributes()) names.push_back(a.name());
  CHECK(names == std::vector<std::string>{"__renamed", "__k1", "__k2", "__k3"});
  CHECK(y->attribute("__k3")->proto().i() == 3);
}
