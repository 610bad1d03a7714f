#include <catch2/catch.hpp>

#include "name_table.h"

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
  CHECK(t.insert("n"));
  CHECK_FALSE(t.insert("n"));
  t.erase("n");
  CHECK(t.contains("n"));
  t.erase("n");
  CHECK_FALSE(t.contains("n"));
  CHECK(t.fresh("n") == "n");
}

TEST_CASE("many requests for one base stay linear", "[names]") {
  NameTable t;
  for (int i = 0; i < 100000; ++i) t.fresh("x");
  CHECK(t.size() == 100000);
  CHECK(t.contains("x_99999"));
}
