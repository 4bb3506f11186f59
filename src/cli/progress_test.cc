#include "cli/progress.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

AppProgress Progress(int64_t done, int64_t running, int64_t pending, int64_t elapsed_s = 12) {
  AppProgress p;
  p.app_id = "application_1_0001";
  p.state = "RUNNING";
  p.attempt = 1;
  p.done = done;
  p.running = running;
  p.pending = pending;
  p.elapsed_s = elapsed_s;
  return p;
}

// The bar between the brackets.
std::string BarOf(const std::string& line) {
  const size_t open = line.find('[');
  const size_t close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

TEST(RenderProgressTest, TtyLineHasABarOfDoneRunningAndPendingShares) {
  // 83 columns leave 20 for the bar: 3 of 10 done, 2 running, 5 pending.
  const std::string line = RenderProgress(Progress(3, 2, 5), 83, true);
  EXPECT_EQ(line,
            "application_1_0001 RUNNING [######====..........] 3 done, 2 running, "
            "5 pending, 12s");
  EXPECT_EQ(line.size(), 83u);
  // Wider terminals: the bar stops at 40 cells.
  EXPECT_EQ(BarOf(RenderProgress(Progress(3, 2, 5), 200, true)),
            std::string(12, '#') + std::string(8, '=') + std::string(20, '.'));
  EXPECT_EQ(line.find('\r'), std::string::npos);
  EXPECT_EQ(line.find('\033'), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(RenderProgressTest, BarFillsWithDoneWhenNothingIsLeftAndIsEmptyWithNoContainers) {
  EXPECT_EQ(BarOf(RenderProgress(Progress(7, 0, 0), 120, true)), std::string(40, '#'));
  EXPECT_EQ(BarOf(RenderProgress(Progress(0, 0, 0), 120, true)), std::string(40, '.'));
  // One running container among many pending still shows.
  EXPECT_THAT(BarOf(RenderProgress(Progress(0, 1, 1000), 120, true)), HasSubstr("="));
  EXPECT_EQ(BarOf(RenderProgress(Progress(2, 2, 0), 120, true)),
            std::string(20, '#') + std::string(20, '='));
}

TEST(RenderProgressTest, NarrowTerminalsDropTheIdThenTheBarThenCutTheLine) {
  const std::string mid = RenderProgress(Progress(1, 1, 1), 75, true);
  EXPECT_EQ(mid.size(), 75u);
  EXPECT_EQ(mid.substr(0, 28), "application_1_0001 RUNNING [");
  EXPECT_EQ(BarOf(mid).size(), 12u);
  // 60 columns: no room for the id and a bar of 10; the bar stays.
  const std::string no_id = RenderProgress(Progress(1, 1, 1), 60, true);
  EXPECT_EQ(no_id, "RUNNING [" + BarOf(no_id) + "] 1 done, 1 running, 1 pending, 12s");
  EXPECT_EQ(no_id.size(), 60u);
  EXPECT_EQ(BarOf(no_id), std::string(5, '#') + std::string(5, '=') + std::string(6, '.'));
  EXPECT_EQ(RenderProgress(Progress(1, 1, 1), 50, true),
            "RUNNING 1 done, 1 running, 1 pending, 12s");
  EXPECT_EQ(RenderProgress(Progress(1, 1, 1), 10, true), "RUNNING 1 ");
  EXPECT_LE(RenderProgress(Progress(1, 1, 1), 0, true).size(), 80u);  // unknown width: 80
  // A real id on an 80-column terminal: the id goes, a bar of 37 stays.
  AppProgress real = Progress(3, 5, 0, 2);
  real.app_id = "application_1795622593430_0002";
  EXPECT_EQ(RenderProgress(real, 80, true), "RUNNING [" + std::string(14, '#') +
                                                std::string(23, '=') +
                                                "] 3 done, 5 running, 0 pending, 2s");
  EXPECT_EQ(RenderProgress(real, 120, true).substr(0, 40),
            "application_1795622593430_0002 RUNNING [");
}

TEST(RenderProgressTest, PlainLineHasNoBarAndNoClock) {
  EXPECT_EQ(RenderProgress(Progress(3, 2, 5, 12), 80, false),
            "application_1_0001: RUNNING (attempt 1), containers: 3 done, 2 running, 5 pending");
  EXPECT_EQ(RenderProgress(Progress(3, 2, 5, 12), 80, false),
            RenderProgress(Progress(3, 2, 5, 99), 20, false));
}

TEST(ProgressPrinterTest, TtyRewritesOneLineAndClearsItAtTheEnd) {
  ProgressPrinter printer(/*tty=*/true, 200);
  const std::string first = printer.Update(Progress(0, 1, 10, 100), 0);
  ASSERT_EQ(first[0], '\r');
  EXPECT_EQ(first.find('\n'), std::string::npos);
  // Every poll redraws (the clock moves); a shorter line is padded over the longer one.
  const std::string second = printer.Update(Progress(1, 0, 0, 1), 100);
  ASSERT_EQ(second[0], '\r');
  EXPECT_EQ(second.size(), first.size());
  EXPECT_EQ(second.back(), ' ');
  const std::string end = printer.Finish();
  // The padding is already blank: the clear covers the last line drawn.
  EXPECT_EQ(end,
            "\r" + std::string(RenderProgress(Progress(1, 0, 0, 1), 200, true).size(), ' ') + "\r");
  EXPECT_EQ(printer.Finish(), "");
}

TEST(ProgressPrinterTest, PlainWritesOnlyChangesAtMostOneEveryInterval) {
  ProgressPrinter printer(/*tty=*/false, 80, 2000);
  EXPECT_EQ(printer.Update(Progress(0, 1, 4), 0),
            "application_1_0001: RUNNING (attempt 1), containers: 0 done, 1 running, 4 pending\n");
  EXPECT_EQ(printer.Update(Progress(0, 1, 4, 13), 3000), "");  // nothing changed
  EXPECT_EQ(printer.Update(Progress(0, 3, 2), 3500),
            "application_1_0001: RUNNING (attempt 1), "
            "containers: 0 done, 3 running, 2 pending\n");
  // A change within 2 s of the last line waits; the next poll after the interval writes the
  // counts of that poll.
  EXPECT_EQ(printer.Update(Progress(1, 3, 1), 4000), "");
  EXPECT_EQ(printer.Update(Progress(2, 3, 0), 5000), "");
  EXPECT_THAT(printer.Update(Progress(2, 3, 0), 5500), HasSubstr("2 done, 3 running, 0 pending\n"));
  EXPECT_EQ(printer.Finish(), "");
}

}  // namespace
}  // namespace weft::cli
