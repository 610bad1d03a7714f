#include <catch2/catch.hpp>

#include "io/loader.h"
#include "ir/rewriter.h"
#include "models.h"
#include "support.h"
#include "support/name_table.h"

using graphrw::ir::NameTable;

TEST_CASE("fresh names are unique and readable", "[names]") {
  NameTable t;
  CHECK(t.fresh("a") == "a");
  CHECK(t.fresh("a") == "a_1");
  CHECK(t.fresh("a") == "a_2");
  t.insert("b_1");
  CHECK(t.fresh("b") == "b");
  CHECK(t.fresh("b") == "b_2");  // b_1 was taken
  CHECK(t.contains("a_2"));
}

TEST_CASE("names are counted, so erasing one holder keeps the other", "[names]") {
  NameTable t;
  CHECK_FALSE(t.contains("n"));  // builds the (empty) table
  t.insert("n");
  t.insert("n");
  t.erase("n");
  CHECK(t.contains("n"));
  t.erase("n");
  CHECK_FALSE(t.contains("n"));
  CHECK(t.fresh("n") == "n");
}

// (How the cost grows is measured by bench/, not here.)
TEST_CASE("100,000 requests for one base give x, x_1, ..., x_99999 in order", "[names]") {
  NameTable t;
  bool inOrder = true;
  for (int i = 0; i < 100000; ++i) inOrder &= t.fresh("x") == (i ? "x_" + std::to_string(i) : std::string("x"));
  CHECK(inOrder);
  CHECK(t.size() == 100000);
  CHECK(t.contains("x_99999"));
  CHECK_FALSE(t.contains("x_100000"));
}

TEST_CASE("the table is built from its filler on first use, then kept exact", "[names]") {
  NameTable t;
  int fills = 0;
  t.setFiller([&](NameTable& table) {
    ++fills;
    graphrw::ir::NameFiller::add(table, "a");
    graphrw::ir::NameFiller::add(table, "b");
  });
  t.insert("ignored before the build");  // the filler reads the IR instead
  CHECK_FALSE(t.built());
  CHECK(t.fresh("a") == "a_1");
  CHECK(t.built());
  CHECK(t.contains("b"));
  CHECK_FALSE(t.contains("ignored before the build"));
  t.insert("c");
  CHECK(t.contains("c"));
  CHECK(fills == 1);
}

TEST_CASE("model name tables follow the IR through lazy building", "[names]") {
  auto model = graphrw::loadModel(graphrw::test::parseModel(graphrw::test::kSmallModel));
  auto& names = model->valueNames();
  CHECK_FALSE(names.built());
  CHECK(names.contains("H"));
  CHECK(names.contains("W"));
  graphrw::ir::Rewriter rw(*model);
  auto& g = model->graph();
  CHECK(rw.createNode(g, nullptr, {"n", "Identity", "", {g.findLocal("W")}, {"H"}})->output(0)->name() == "H_1");
  CHECK(rw.reserveNodeName(g, "x") == "x");
  CHECK(rw.reserveNodeName(g, "x") == "x_1");
  CHECK(model->nodeNames().contains("x_1"));
}

TEST_CASE("released name tables are rebuilt from the IR on the next query", "[names]") {
  auto model = graphrw::loadModel(graphrw::test::parseModel(graphrw::test::kSmallModel));
  auto& g = model->graph();
  const graphrw::ir::Function& layer = *model->functions().front();
  CHECK(model->valueNames().contains("H"));
  CHECK(layer.body().names().contains("y"));
  graphrw::ir::Rewriter rw(*model);
  CHECK(rw.createNode(g, nullptr, {"n", "Identity", "", {g.findLocal("W")}, {"H"}})->output(0)->name() == "H_1");
  model->releaseNameTables();
  CHECK_FALSE(model->valueNames().built());
  CHECK_FALSE(model->nodeNames().built());
  CHECK_FALSE(layer.body().names().built());
  // Made while the table is released: the rebuilt table has it from the IR.
  CHECK(rw.createNode(g, nullptr, {"m", "Identity", "", {g.findLocal("W")}, {"Z"}})->output(0)->name() == "Z");
  CHECK(model->valueNames().contains("Z"));
  CHECK(model->valueNames().contains("H_1"));
  CHECK(rw.createNode(g, nullptr, {"n", "Identity", "", {g.findLocal("W")}, {"H"}})->output(0)->name() == "H_2");
  CHECK(model->nodeNames().contains("n_1"));
  CHECK(layer.body().names().contains("y"));
  CHECK(layer.body().names().built());
}
