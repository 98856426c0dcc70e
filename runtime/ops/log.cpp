#include "runtime/ops/log.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <mutex>

namespace graspd::log {

namespace detail {
std::atomic<int> level_value{static_cast<int>(Level::info)};
}  // namespace detail

namespace {

constexpr std::array<std::string_view, 5> level_names{"trace", "debug", "info", "warn", "error"};
constexpr std::array<std::string_view, 5> level_labels{"TRACE", "DEBUG", "INFO ", "WARN ", "ERROR"};

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}

Sink& sink() {
  static Sink instance;
  return instance;
}

void write_stderr(std::string_view line) {
  // One write(2) per line keeps lines from different threads whole.
  while (!line.empty()) {
    auto written = ::write(STDERR_FILENO, line.data(), line.size());
    if (written <= 0) return;
    line.remove_prefix(static_cast<std::size_t>(written));
  }
}

std::string utc_timestamp() {
  auto now = std::chrono::system_clock::now();
  auto seconds = std::chrono::system_clock::to_time_t(now);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  std::array<char, 32> text{};
  auto length = std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%S", &parts);
  std::array<char, 8> fraction{};
  std::snprintf(fraction.data(), fraction.size(), ".%03dZ", static_cast<int>(millis.count()));
  return std::string(text.data(), length) + fraction.data();
}

}  // namespace

std::optional<Level> parse_level(std::string_view text) {
  for (std::size_t i = 0; i < level_names.size(); ++i) {
    if (text == level_names[i]) return static_cast<Level>(i);
  }
  return std::nullopt;
}

std::string_view level_name(Level level) {
  return level_names[static_cast<std::size_t>(level)];
}

void set_level(Level level) {
  detail::level_value.store(static_cast<int>(level), std::memory_order_relaxed);
}

Level current_level() {
  return static_cast<Level>(detail::level_value.load(std::memory_order_relaxed));
}

void set_sink(Sink new_sink) {
  std::lock_guard lock{sink_mutex()};
  sink() = std::move(new_sink);
}

void reset_sink() {
  set_sink(nullptr);
}

std::string format_line(Level level, std::string_view component, std::string_view message) {
  std::string line = utc_timestamp();
  line += ' ';
  line += level_labels[static_cast<std::size_t>(level)];
  line += " [";
  line += component;
  line += "] ";
  // A record is one line: embedded newlines would let input forge log lines.
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += '\n';
  return line;
}

void write(Level level, std::string_view component, std::string_view message) {
  if (!enabled(level)) return;
  auto line = format_line(level, component, message);
  std::lock_guard lock{sink_mutex()};
  if (sink()) {
    sink()(line);
  } else {
    write_stderr(line);
  }
}

}  // namespace graspd::log
