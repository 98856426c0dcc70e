#include "runtime/ops/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <ostream>

namespace graspd::runtime {

namespace {

constexpr auto kRedrawInterval = std::chrono::milliseconds(200);

}  // namespace

std::string eta_text(double seconds) {
  auto total = static_cast<std::uint64_t>(std::llround(seconds));
  auto minutes = total / 60, rest = total % 60;
  return std::to_string(minutes) + ":" + (rest < 10 ? "0" : "") + std::to_string(rest);
}

bool stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

std::string format_progress_line(const std::string& label, std::uint64_t done,
                                 const std::string& unit, std::optional<double> fraction,
                                 std::chrono::duration<double> elapsed) {
  std::string line = label + ": " + std::to_string(done) + " " + unit;
  auto seconds = elapsed.count();
  if (seconds > 0)
    line += "  " + std::to_string(static_cast<std::uint64_t>(static_cast<double>(done) / seconds)) +
            " " + unit + "/s";
  if (fraction && *fraction >= 0 && *fraction <= 1) {
    line += "  " + std::to_string(static_cast<int>(*fraction * 100)) + "%";
    if (*fraction > 0 && seconds > 0)
      line += "  ETA " + eta_text(seconds * (1 - *fraction) / *fraction);
  }
  return line;
}

ProgressLine::ProgressLine(std::ostream& out, bool terminal, std::string label, std::string unit)
    : out_(out),
      terminal_(terminal),
      label_(std::move(label)),
      unit_(std::move(unit)),
      started_(Clock::now()),
      last_draw_(started_) {}  // the first line after one interval: a rate needs some time

void ProgressLine::update(std::uint64_t done, std::optional<double> fraction,
                          Clock::time_point now) {
  if (!terminal_) return;
  if (last_draw_ && now - *last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  auto line = format_progress_line(label_, done, unit_, fraction, now - started_);
  out_ << '\r' << line << "\x1b[K" << std::flush;
  drawn_ = true;
}

void ProgressLine::clear() {
  if (!drawn_) return;
  out_ << "\r\x1b[K" << std::flush;
  drawn_ = false;
}

}  // namespace graspd::runtime
