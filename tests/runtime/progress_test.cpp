#include "runtime/ops/progress.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace graspd::runtime {
namespace {

using namespace std::chrono_literals;

TEST(ProgressLine, CountRateAndEtaWhenTheShareIsKnown) {
  EXPECT_EQ(format_progress_line("import", 3000, "lines", std::nullopt, 2s),
            "import: 3000 lines  1500 lines/s");
  // A quarter done in 30 s: 90 s to go.
  EXPECT_EQ(format_progress_line("export", 250, "events", 0.25, 30s),
            "export: 250 events  8 events/s  25%  ETA 1:30");
  EXPECT_EQ(format_progress_line("export", 0, "events", 0.0, 0s), "export: 0 events  0%");
}

TEST(ProgressLine, DrawsInPlaceOnATerminalAtMostFiveTimesASecond) {
  std::ostringstream out;
  ProgressLine progress(out, true, "import", "lines");
  auto t = ProgressLine::Clock::now();
  progress.update(1, std::nullopt, t);
  progress.update(2, std::nullopt, t + 100ms);
  EXPECT_EQ(out.str().find("2 lines"), std::string::npos) << "throttled";
  progress.update(3, std::nullopt, t + 250ms);
  EXPECT_NE(out.str().find("\rimport: 3 lines"), std::string::npos) << out.str();
  progress.clear();
  EXPECT_EQ(out.str().substr(out.str().size() - 4), "\r\x1b[K");
}

TEST(ProgressLine, SilentWhenNotATerminal) {
  std::ostringstream out;
  ProgressLine progress(out, false, "import", "lines");
  progress.update(1);
  progress.clear();
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace graspd::runtime
