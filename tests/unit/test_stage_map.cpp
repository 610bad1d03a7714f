#include <catch2/catch.hpp>

#include "io/loader.h"
#include "passes/popart/place/place_stage_map.h"
#include "support.h"

using namespace graphrw;
using namespace graphrw::ir;

TEST_CASE("the place pass's stage map finds each node's stage after other algorithms used the scratch space",
          "[place]") {
  auto model = loadModel(test::parseModel(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2] x, bool c) => (float[2] y) {
  a = Neg (x)
  b = Abs (a)
  y = If (c) <then_branch = t () => (float[2] r) { r = Neg (b) }, else_branch = e () => (float[2] r) { r = Abs (b) }>
}
)"));
  std::vector<Node*> nodes;
  for (const auto& n : model->graph().nodes()) nodes.push_back(n.get());
  StageMap stage(nodes);
  CHECK(stage.size() == 0);
  CHECK_FALSE(stage.find(nodes[0]));
  stage.set(nodes[0], 2);
  stage.setAt(2, 1);
  CHECK(stage.size() == 2);
  // Another algorithm numbers the nodes its own way (Node::scratch means nothing between algorithms).
  for (Node* n : nodes) n->scratch = 7;
  CHECK(stage.find(nodes[0]) == std::optional<size_t>(2));
  CHECK_FALSE(stage.find(nodes[1]));
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i]->scratch = static_cast<uint32_t>(nodes.size() - 1 - i);
  CHECK(stage.at(nodes[2]) == 1);
  stage.set(nodes[1], 0);
  stage.set(nodes[1], 3);  // set again: still one node more
  CHECK(stage.size() == 3);
  CHECK(stage.at(nodes[1]) == 3);
  // A node of a branch is none of them, whatever its scratch says.
  const Node* inner = nodes[2]->attributes()[0].g()->nodes().front().get();
  inner->scratch = 0;
  CHECK_FALSE(stage.find(inner));
}
