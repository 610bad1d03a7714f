// Sparse initializers made dense (what legalize does for PopART, which reads
// graph.initializer only): both index forms, and every malformed form refused
// with the tensor's name.
#include <catch2/catch.hpp>

#include <cstring>

#include "analysis/sparse.h"
#include "support.h"
#include "support/error.h"

using namespace graphrw;

namespace {

onnx::SparseTensorProto sparseOf(const char* initializers, bool coordinates) {
  auto m = test::parseModel(std::string(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x) => (float[2, 3] y) <)") +
                            initializers + R"(> { y = Add(x, w) }
)");
  test::sparsify(m, "w", coordinates);
  return m.graph().sparse_initializer(0);
}

std::vector<float> floats(const HostTensor& t) {
  std::vector<float> out(t.data.size() / sizeof(float));
  std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

std::string refusal(const onnx::SparseTensorProto& sp, uint64_t maxBytes = UINT64_MAX) {
  try {
    densify(sp, maxBytes);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::BadInput);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("sparse: linear indices and coordinates give the dense tensor", "[sparse]") {
  for (bool coordinates : {false, true}) {
    INFO(coordinates);
    auto sp = sparseOf("float[2, 3] w = {0, 1.5, 0, 0, 0, -2}", coordinates);
    REQUIRE(sp.values().float_data_size() == 2);
    HostTensor t = densify(sp, UINT64_MAX);
    CHECK(t.type == onnx::TensorProto::FLOAT);
    CHECK(t.dims == std::vector<int64_t>{2, 3});
    CHECK(floats(t) == std::vector<float>{0, 1.5f, 0, 0, 0, -2});
  }
  auto none = sparseOf("float[2, 3] w = {0, 0, 0, 0, 0, 0}", false);
  CHECK(floats(densify(none, UINT64_MAX)) == std::vector<float>(6, 0.0f));
}

TEST_CASE("sparse: malformed sparse tensors are refused naming the tensor", "[sparse][hostile]") {
  auto linear = sparseOf("float[2, 3] w = {0, 1.5, 0, 0, 0, -2}", false);
  auto coords = sparseOf("float[2, 3] w = {0, 1.5, 0, 0, 0, -2}", true);

  auto out = linear;
  out.mutable_indices()->set_int64_data(1, 6);
  CHECK_THAT(refusal(out), Catch::Contains("sparse initializer 'w': index 6 is outside the 6 elements"));
  auto order = linear;
  order.mutable_indices()->set_int64_data(1, 1);
  CHECK_THAT(refusal(order), Catch::Contains("'w': indices are not in strictly increasing order"));
  auto coordinate = coords;
  coordinate.mutable_indices()->set_int64_data(3, 3);  // second value's column
  CHECK_THAT(refusal(coordinate), Catch::Contains("'w': index 1 has coordinate 3 in dimension 1 of size 3"));
  auto shape = linear;
  shape.mutable_indices()->add_dims(1);
  CHECK_THAT(refusal(shape), Catch::Contains("'w': indices must have shape [2] or [2, 2]"));
  auto shortIndices = coords;
  shortIndices.mutable_indices()->mutable_int64_data()->RemoveLast();
  CHECK_THAT(refusal(shortIndices), Catch::Contains("tensor 'w (indices)' holds 24 bytes, its shape needs 32"));
  auto int32 = linear;
  int32.mutable_indices()->set_data_type(onnx::TensorProto::INT32);
  CHECK_THAT(refusal(int32), Catch::Contains("'w': indices must be int64"));
  auto values = linear;
  values.mutable_values()->mutable_float_data()->RemoveLast();
  CHECK_THAT(refusal(values), Catch::Contains("tensor 'w' holds 4 bytes, its shape needs 8"));
  auto huge = linear;
  huge.set_dims(0, int64_t{1} << 40);
  huge.set_dims(1, int64_t{1} << 20);
  CHECK_THAT(refusal(huge),
             Catch::Contains("'w': its dense form needs 4611686018427387904 bytes, more than the limit"));
  auto overflow = linear;
  overflow.set_dims(0, int64_t{1} << 62);
  CHECK_THAT(refusal(overflow), Catch::Contains("'w': dims are negative or too large"));
  CHECK_THAT(refusal(linear, 23), Catch::Contains("'w': its dense form needs 24 bytes, more than the limit of 23"));
  CHECK(refusal(linear, 24) == "no error");
}
