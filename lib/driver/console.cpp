#include "driver/console.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <mutex>

#include "support/json_text.h"

namespace graphrw::cli {
namespace {

thread_local const std::string* tlsModel = nullptr;
thread_local size_t tlsWarnings = 0;

std::mutex& consoleMutex() {
  static std::mutex m;
  return m;
}
std::string& statusText() {  // guarded by consoleMutex
  static std::string s;
  return s;
}

// %E: the message with control characters escaped (names come from models),
// after the model it is about when a batch worker logs it.
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string text;
    if (tlsModel) text = escapeControl(*tlsModel) + ": ";
    text += escapeControl(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

// stderr, clearing the status line before a log line and drawing it again after.
// Quiet, it prints errors only but still counts warnings: reports are the same
// with and without -q.
class ConsoleSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit ConsoleSink(bool quiet) : quiet_(quiet) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level >= spdlog::level::warn) ++tlsWarnings;
    if (quiet_ && msg.level < spdlog::level::err) return;
    spdlog::memory_buf_t out;
    formatter_->format(msg, out);
    std::lock_guard lock(consoleMutex());
    const std::string& status = statusText();
    if (!status.empty()) std::cerr << "\r\033[K";
    std::cerr.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!status.empty()) std::cerr << status;
    std::cerr.flush();
  }
  void flush_() override { std::cerr.flush(); }

 private:
  bool quiet_;
};

}  // namespace

void setupLogging(int verbosity, bool quiet) {
  auto logger = std::make_shared<spdlog::logger>("graphrw", std::make_shared<ConsoleSink>(quiet));
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('E').set_pattern("graphrw: %l: %E");
  logger->set_formatter(std::move(formatter));
  spdlog::set_default_logger(logger);
  if (quiet)
    spdlog::set_level(spdlog::level::warn);  // counted, not printed (ConsoleSink)
  else if (verbosity >= 2)
    spdlog::set_level(spdlog::level::trace);
  else if (verbosity == 1)
    spdlog::set_level(spdlog::level::debug);
  else
    spdlog::set_level(spdlog::level::info);
}

ModelLogScope::ModelLogScope(const std::string& model) {
  tlsModel = &model;
  tlsWarnings = 0;
}
ModelLogScope::~ModelLogScope() { tlsModel = nullptr; }
size_t ModelLogScope::warnings() const { return tlsWarnings; }

void setStatusLine(const std::string& text) {
  std::lock_guard lock(consoleMutex());
  std::string& status = statusText();
  if (status.empty() && text.empty()) return;
  std::cerr << "\r\033[K" << text << std::flush;
  status = text;
}

void printLine(const std::string& text) {
  std::lock_guard lock(consoleMutex());
  const std::string& status = statusText();
  if (!status.empty()) std::cerr << "\r\033[K";
  std::cerr << text << "\n";
  if (!status.empty()) std::cerr << status;
  std::cerr.flush();
}

}  // namespace graphrw::cli
