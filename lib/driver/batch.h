// Batch conversion: one job per model on N worker threads. One failing model
// never stops the others; results come back in input order.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace graphrw {

struct BatchItem {
  std::string input;
  std::string output;
  bool ok = false;
  int exitCode = 0;
  std::string error;  // one line
  size_t warnings = 0;  // warning and error log lines the conversion wrote
  std::vector<std::string> unchanged;  // names of the passes that changed nothing
  nlohmann::json report = nlohmann::json::array();  // the pass report, when asked
};

struct Shard {
  size_t index = 0;  // 0-based
  size_t count = 1;
  // Parses "I/N" with 0 <= I < N. Throws Error(Usage).
  static Shard parse(const std::string& text);
};

// This shard's share of the inputs: every N-th of the sorted, de-duplicated
// list, starting at I. The shards of one list are disjoint and cover it.
std::vector<std::string> shardInputs(std::vector<std::string> inputs, const Shard& shard);

// Runs job(item) for every item on `workers` threads; job throws graphrw::Error
// (or anything) to fail an item. `progress` is called after each item, from the
// thread that finished it, serialized.
void runBatch(std::vector<BatchItem>& items, size_t workers, const std::function<void(BatchItem&)>& job,
              const std::function<void(const BatchItem&, size_t done, size_t failed)>& progress);

}  // namespace graphrw
