#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  // graphrw compare finds ONNX Runtime through the environment, as a user's
  // does: the one the test set-up installed, for every graphrw the tests start
  // (a test that wants another sets GRAPHRW_ORT_DIR on its own command line).
  setenv("GRAPHRW_ORT_DIR", GRAPHRW_ORT_DIR, 0);
  // Every pipeline, in this process and in every graphrw it starts, checks
  // after each pass the IR's invariants and that the edits counted match what
  // changed (--verify-each). A test of the flag itself unsets it.
  setenv("GRAPHRW_VERIFY_EACH", "1", 0);
  return Catch::Session().run(argc, argv);
}
