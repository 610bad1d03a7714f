// What a PopART session refuses after import, while it prepares the IR
// (autodiff, optimizer, patterns) and lowers it: findings in the form of
// check.h's, for `validate --target popart --mode training` and legalize.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "target/popart/check.h"

namespace graphrw::popart {

struct SessionMode {
  bool training = false;  // a TrainingSession: every initializer a Variable, updated from its gradient
};

// Every session-time refusal graphrw knows of, in graph order.
std::vector<Finding> checkSession(const ir::Model& model, SessionMode mode);

// The session finding classes, in the order checkSession reports them.
const std::vector<std::string>& sessionFindingClasses();

}  // namespace graphrw::popart
