// graspd's own logging: one line per record on stderr,
//   2026-11-30T15:04:05.123Z INFO  [component] message
// thread-safe (each line is written with a single write(2)), filtered by a process-wide level.
// Event content is never logged by default: callers log ids and sizes, not payloads.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace graspd::log {

enum class Level { trace = 0, debug = 1, info = 2, warn = 3, error = 4 };

/// "trace", "debug", "info", "warn", "error" → Level; std::nullopt otherwise.
std::optional<Level> parse_level(std::string_view text);
std::string_view level_name(Level level);

void set_level(Level level);
Level current_level();
inline bool enabled(Level level);

/// Where formatted lines go (stderr by default). Tests capture lines with this.
using Sink = std::function<void(std::string_view line)>;
void set_sink(Sink sink);
void reset_sink();

/// Formats and emits one record if `level` is enabled.
void write(Level level, std::string_view component, std::string_view message);

/// Formats the full line (timestamp, level, component, message, trailing newline).
std::string format_line(Level level, std::string_view component, std::string_view message);

/// The component each log line names, one per part of the daemon (the `[component]` field).
namespace components {
inline constexpr std::string_view acceptance = "acceptance";
inline constexpr std::string_view daemon = "daemon";
inline constexpr std::string_view git = "git";
inline constexpr std::string_view http = "http";
inline constexpr std::string_view identity = "identity";
inline constexpr std::string_view relay = "relay";
inline constexpr std::string_view sync = "sync";
inline constexpr std::string_view sync_manager = "sync_manager";
inline constexpr std::string_view sync_plus = "sync_plus";
}  // namespace components

namespace detail {
extern std::atomic<int> level_value;
template <class... Args>
void emit(Level level, std::string_view component, const Args&... args) {
  if (!enabled(level)) return;
  std::ostringstream text;
  (text << ... << args);
  write(level, component, text.str());
}
}  // namespace detail

inline bool enabled(Level level) {
  return static_cast<int>(level) >= detail::level_value.load(std::memory_order_relaxed);
}

template <class... Args>
void trace(std::string_view component, const Args&... args) {
  detail::emit(Level::trace, component, args...);
}
template <class... Args>
void debug(std::string_view component, const Args&... args) {
  detail::emit(Level::debug, component, args...);
}
template <class... Args>
void info(std::string_view component, const Args&... args) {
  detail::emit(Level::info, component, args...);
}
template <class... Args>
void warn(std::string_view component, const Args&... args) {
  detail::emit(Level::warn, component, args...);
}
template <class... Args>
void error(std::string_view component, const Args&... args) {
  detail::emit(Level::error, component, args...);
}

}  // namespace graspd::log
