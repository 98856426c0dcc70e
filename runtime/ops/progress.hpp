// A progress line for long operator commands (graspd import, graspd export): count, rate and,
// when the total is known, percentage and ETA, redrawn in place on a terminal at most five times a
// second. When stderr is not a terminal it writes nothing, so logs and pipes get no extra lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace graspd::runtime {

/// True when file descriptor 2 is a terminal.
bool stderr_is_terminal();

/// "m:ss" for a time left, e.g. "1:30".
std::string eta_text(double seconds);

/// e.g. "import: 12000 lines  3400 lines/s  45%  ETA 0:12" (`fraction` = share done, when known).
std::string format_progress_line(const std::string& label, std::uint64_t done,
                                 const std::string& unit, std::optional<double> fraction,
                                 std::chrono::duration<double> elapsed);

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  /// `label` starts the line, e.g. "import: ... lines": "import", "lines".
  ProgressLine(std::ostream& out, bool terminal, std::string label, std::string unit);

  /// Redraws with `done` units (and the share done, when known) if the last draw is old enough.
  void update(std::uint64_t done, std::optional<double> fraction = std::nullopt,
              Clock::time_point now = Clock::now());
  /// Erases the line, before other output and at the end.
  void clear();

 private:
  std::ostream& out_;
  bool terminal_;
  std::string label_;
  std::string unit_;
  Clock::time_point started_;
  std::optional<Clock::time_point> last_draw_;
  bool drawn_ = false;
};

}  // namespace graspd::runtime
