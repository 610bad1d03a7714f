#include "driver/batch.h"

#include <charconv>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "support/error.h"

namespace graphrw {

Shard Shard::parse(const std::string& text) {
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
  Shard s{number(text.substr(0, slash)), number(text.substr(slash + 1))};
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
