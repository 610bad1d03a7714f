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
  std::string from = "--shard";  // where index and count came from ("--shard", "Slurm", ...)
  // Parses "I/N" with 0 <= I < N, or "auto" / "auto/N": the index (and count)
  // from a scheduler's environment (see fromEnvironment). Throws Error(Usage).
  static Shard parse(const std::string& text);
  // The shard a scheduler's task is: Slurm array jobs (SLURM_ARRAY_TASK_ID,
  // _MIN, _MAX, _STEP, _COUNT), Kubernetes Indexed Jobs (JOB_COMPLETION_INDEX,
  // 0-based, the count given), GNU parallel (PARALLEL_SEQ, 1-based, the count
  // given). `count` is the N of "auto/N" (0: not given). Throws Error(Usage)
  // when no scheduler's variables are set, or they disagree with `count`.
  static Shard fromEnvironment(size_t count, const std::function<const char*(const char*)>& getenv);
};

// This shard's share of the inputs: every N-th of the sorted, de-duplicated
// list, starting at I. The shards of one list are disjoint and cover it.
std::vector<std::string> shardInputs(std::vector<std::string> inputs, const Shard& shard);

// One report from the reports of a batch's shards (`graphrw run ... --shard I/N
// --report F`): models in input order, summary counts added, seconds added
// (`seconds_longest_shard` the largest), unchanged_passes added per pass.
// Throws Error(BadInput) naming the file when the reports do not belong
// together: another rule file or dry-run setting, a model in two of them, a
// shard twice or missing (when the reports say their shard).
nlohmann::json mergeReports(const std::vector<std::pair<std::string, nlohmann::json>>& reports);

// Runs job(item) for every item on `workers` threads; job throws graphrw::Error
// (or anything) to fail an item. `progress` is called after each item, from the
// thread that finished it, serialized.
void runBatch(std::vector<BatchItem>& items, size_t workers, const std::function<void(BatchItem&)>& job,
              const std::function<void(const BatchItem&, size_t done, size_t failed)>& progress);

}  // namespace graphrw
