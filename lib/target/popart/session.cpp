#include "target/popart/session.h"

#include <onnx/onnx_pb.h>

namespace graphrw::popart {

namespace {

bool isFloat(int32_t type) {
  using TP = onnx::TensorProto;
  return type == TP::FLOAT || type == TP::FLOAT16 || type == TP::BFLOAT16 || type == TP::DOUBLE;
}

std::string typeName(int32_t type) {
  return onnx::TensorProto_DataType_IsValid(type)
             ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(type))
             : std::to_string(type);
}

}  // namespace

std::vector<Finding> checkSession(const ir::Model& model, SessionMode mode) {
  std::vector<Finding> findings;
  if (mode.training) {
    // A training session makes every ONNX initializer a Variable
    // (willow/src/ir.cpp:2329-2350; only an inference session with
    // constantWeights makes Constants) and grows an update for it, which
    // stops the build on one that is not floating point: "Currently only
    // floating point variable tensors are updatable" (ir.cpp:3080-3083).
    for (const auto& init : model.graph().initializers()) {
      const ir::Value* v = init.value;
      if (v->isGraphInput() || (v->uses().empty() && v->graphOutputCount() == 0)) continue;
      int32_t type = init.tensor->dataType();
      if (isFloat(type)) continue;
      findings.push_back({"training-integer-variable", "initializer '" + v->name() + "'",
                          "a " + typeName(type) +
                              " initializer is a Variable in a PopART training session, which refuses to update "
                              "one that is not floating point (willow/src/ir.cpp:3080-3083); graphrw legalize "
                              "makes it a Constant"});
    }
  }
  return findings;
}

const std::vector<std::string>& sessionFindingClasses() {
  static const std::vector<std::string> classes = {"training-integer-variable"};
  return classes;
}

}  // namespace graphrw::popart
