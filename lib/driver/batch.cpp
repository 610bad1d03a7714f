#include "driver/batch.h"

#include <charconv>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "support/error.h"

namespace graphrw {

namespace {

// A scheduler variable: a decimal integer, or nothing when unset.
std::optional<size_t> envNumber(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  if (!v) return std::nullopt;
  std::string_view s(v);
  size_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    usageError("--shard auto: " + std::string(name) + "='" + std::string(s) + "' is not a number");
  return n;
}

Shard checked(Shard s, size_t given, const std::string& detail) {
  if (given && given != s.count)
    usageError("--shard auto/" + std::to_string(given) + ": " + s.from + " says " + std::to_string(s.count) +
               " tasks (" + detail + ")");
  if (s.count == 0)
    usageError("--shard auto: " + s.from + " gives no task count (" + detail + "); write --shard auto/N");
  if (s.index >= s.count)
    usageError("--shard auto: " + s.from + " task " + std::to_string(s.index) + " is not below the count " +
               std::to_string(s.count) + " (" + detail + ")");
  return s;
}

}  // namespace

Shard Shard::fromEnvironment(size_t count, const std::function<const char*(const char*)>& getenv) {
  if (auto id = envNumber(getenv, "SLURM_ARRAY_TASK_ID")) {
    // sbatch --array=MIN-MAX[:STEP]: IDs MIN, MIN+STEP, ... MAX; a list (--array=1,5,7) has no arithmetic.
    size_t min = envNumber(getenv, "SLURM_ARRAY_TASK_MIN").value_or(0);
    size_t step = envNumber(getenv, "SLURM_ARRAY_TASK_STEP").value_or(1);
    auto max = envNumber(getenv, "SLURM_ARRAY_TASK_MAX");
    auto tasks = envNumber(getenv, "SLURM_ARRAY_TASK_COUNT");
    std::string detail = "SLURM_ARRAY_TASK_ID=" + std::to_string(*id) + ", _MIN=" + std::to_string(min) +
                         (max ? ", _MAX=" + std::to_string(*max) : "") + ", _STEP=" + std::to_string(step) +
                         (tasks ? ", _COUNT=" + std::to_string(*tasks) : "");
    if (step == 0 || *id < min || (*id - min) % step)
      usageError("--shard auto: an unexpected Slurm array (" + detail + ")");
    size_t span = max && *max >= min ? (*max - min) / step + 1 : 0;
    if (tasks && span && *tasks != span)
      usageError("--shard auto: a Slurm array that is a list, not a range (" + detail + "); use --shard I/N");
    return checked({(*id - min) / step, tasks ? *tasks : span ? span : count, "Slurm"}, count, detail);
  }
  if (auto index = envNumber(getenv, "JOB_COMPLETION_INDEX")) {
    if (!count) usageError("--shard auto: a Kubernetes Indexed Job does not say its completions; write --shard auto/N");
    return checked({*index, count, "Kubernetes"}, count, "JOB_COMPLETION_INDEX=" + std::to_string(*index));
  }
  if (auto seq = envNumber(getenv, "PARALLEL_SEQ")) {
    if (!count) usageError("--shard auto: GNU parallel does not say how many jobs there are; write --shard auto/N");
    if (*seq == 0) usageError("--shard auto: PARALLEL_SEQ=0 (GNU parallel counts from 1)");
    return checked({*seq - 1, count, "GNU parallel"}, count, "PARALLEL_SEQ=" + std::to_string(*seq));
  }
  usageError(
      "--shard auto: none of SLURM_ARRAY_TASK_ID (Slurm array job), JOB_COMPLETION_INDEX (Kubernetes Indexed "
      "Job), PARALLEL_SEQ (GNU parallel) is set; write --shard I/N");
}

Shard Shard::parse(const std::string& text) {
  if (text == "auto" || text.starts_with("auto/")) {
    size_t count = 0;
    if (text != "auto") {
      std::string n = text.substr(5);
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
      if (n.empty() || ec != std::errc() || end != n.data() + n.size() || count == 0)
        usageError("--shard '" + text + "': expected auto or auto/N with N >= 1");
    }
    return fromEnvironment(count, [](const char* name) { return std::getenv(name); });
  }
  size_t slash = text.find('/');
  auto number = [&](const std::string& s) -> size_t {
    size_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      usageError("--shard '" + text + "': expected I/N with 0 <= I < N" +
                 (ec == std::errc::result_out_of_range ? " (a number too large)" : ""));
    return v;
  };
  if (slash == std::string::npos) usageError("--shard '" + text + "': expected I/N with 0 <= I < N");
  Shard s{number(text.substr(0, slash)), number(text.substr(slash + 1)), "--shard"};
  if (s.count == 0 || s.index >= s.count) usageError("--shard '" + text + "': expected I/N with 0 <= I < N");
  return s;
}

std::vector<std::string> shardInputs(std::vector<std::string> inputs, const Shard& shard) {
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  std::vector<std::string> mine;
  for (size_t i = shard.index; i < inputs.size(); i += shard.count) mine.push_back(inputs[i]);
  return mine;
}

// Long: one check per way shard reports can fail to belong together, in order.
nlohmann::json mergeReports(const std::vector<std::pair<std::string, nlohmann::json>>& reports) {
  if (reports.empty()) usageError("report merge: no reports");
  nlohmann::json merged = {
      {"rules", nullptr}, {"summary", nlohmann::json::object()}, {"models", nlohmann::json::array()}};
  auto& sum = merged["summary"];
  for (const char* key : {"models", "converted", "failed", "warnings", "models_with_warnings"}) sum[key] = 0;
  sum["seconds"] = 0.0;
  sum["seconds_longest_shard"] = 0.0;
  sum["unchanged_passes"] = nlohmann::json::object();
  std::map<std::string, std::string> seen;  // model -> the report it is in
  std::map<size_t, std::string> shards;  // index -> report
  std::optional<size_t> shardCount;
  for (const auto& entry : reports) {
    const std::string& file = entry.first;  // not a structured binding: Clang 14 cannot capture those
    const nlohmann::json& r = entry.second;
    auto bad = [&](const std::string& why) { badInput("report merge: " + file + ": " + why); };
    if (!r.is_object() || !r.contains("summary") || !r["summary"].is_object() || !r.contains("models") ||
        !r["models"].is_array())
      bad("not a batch report of graphrw run (no summary and models)");
    const auto& s = r["summary"];
    try {
      if (merged["rules"].is_null()) {
        merged["rules"] = r.value("rules", "");
        sum["dry_run"] = s.value("dry_run", false);
      } else if (merged["rules"] != r.value("rules", "")) {
        bad("rule file " + r.value("rules", "") + ", the others " + merged["rules"].get<std::string>());
      } else if (sum["dry_run"] != s.value("dry_run", false)) {
        bad("a dry run mixed with a real one");
      }
      Shard shard{0, 1, "--shard"};
      if (s.contains("shard")) shard = {s["shard"].at("index").get<size_t>(), s["shard"].at("count").get<size_t>(), ""};
      if (shardCount && *shardCount != shard.count)
        bad("shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + ", the others of " +
            std::to_string(*shardCount));
      shardCount = shard.count;
      if (auto [it, fresh] = shards.emplace(shard.index, file); !fresh)
        bad("shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + " again (also " + it->second +
            ")");
      for (const char* key : {"models", "converted", "failed", "warnings", "models_with_warnings"})
        sum[key] = sum[key].get<size_t>() + s.at(key).get<size_t>();
      double seconds = s.at("seconds").get<double>();
      sum["seconds"] = sum["seconds"].get<double>() + seconds;
      sum["seconds_longest_shard"] = std::max(sum["seconds_longest_shard"].get<double>(), seconds);
      const nlohmann::json unchanged = s.value("unchanged_passes", nlohmann::json::object());
      for (const auto& [pass, n] : unchanged.items())
        sum["unchanged_passes"][pass] = sum["unchanged_passes"].value(pass, size_t{0}) + n.get<size_t>();
      for (const auto& m : r["models"]) {
        std::string model = m.at("model").get<std::string>();
        if (auto [it, fresh] = seen.emplace(model, file); !fresh)
          bad("model " + model + " is in " + it->second + " too");
        merged["models"].push_back(m);
      }
    } catch (const nlohmann::json::exception& e) {
      bad(std::string("unexpected content (") + e.what() + ")");
    }
  }
  std::string missing;
  for (size_t i = 0; i < *shardCount; ++i)
    if (!shards.count(i)) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  if (!missing.empty())
    badInput("report merge: shard" + std::string(missing.find(',') == std::string::npos ? " " : "s ") + missing +
             " of " + std::to_string(*shardCount) + " missing");
  // The order one machine's run gives: the sorted input list.
  auto& models = merged["models"];
  std::sort(models.begin(), models.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["model"] < b["model"]; });
  sum["shards"] = *shardCount;
  return merged;
}

void runBatch(std::vector<BatchItem>& items, size_t workers, const std::function<void(BatchItem&)>& job,
              const std::function<void(const BatchItem&, size_t, size_t)>& progress) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  size_t done = 0, failed = 0;
  auto work = [&] {
    for (size_t i = next++; i < items.size(); i = next++) {
      BatchItem& item = items[i];
      try {
        job(item);
        item.ok = true;
      } catch (const Error& e) {
        item.exitCode = static_cast<int>(e.code());
        item.error = e.what();
      } catch (const std::exception& e) {
        item.exitCode = static_cast<int>(ExitCode::Internal);
        item.error = std::string("internal error: ") + e.what();
      }
      std::lock_guard lock(mutex);
      ++done;
      if (!item.ok) ++failed;
      progress(item, done, failed);
    }
  };
  workers = std::max<size_t>(1, std::min(workers, items.size()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

}  // namespace graphrw
