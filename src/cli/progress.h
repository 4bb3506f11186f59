// Copyright Weft authors. The progress line of `weft app wait` and `--wait`: an application's
// state and its containers done / running / pending, on stderr (stdout keeps only the final
// line scripts parse).
#ifndef WEFT_CLI_PROGRESS_H_
#define WEFT_CLI_PROGRESS_H_

#include <cstdint>
#include <string>

namespace weft::cli {

// What one poll of the app showed.
struct AppProgress {
  std::string app_id;
  std::string state;  // "RUNNING", ... (YARN's names)
  int32_t attempt = 0;
  int64_t done = 0;     // containers that ended (the AM's included)
  int64_t running = 0;  // containers running now (the AM's included)
  int64_t pending = 0;  // containers the AM still asks for
  int64_t elapsed_s = 0;
};

// The progress as one line, without a line end.
// tty: "APP STATE [###===....] 3 done, 2 running, 5 pending, 12s", at most `width` columns
//   (`width` < 1 means 80): the bar's '#' are the done share, '=' running, '.' pending (of
//   done + running + pending), and takes the columns the text leaves, 10 to 40. When fewer
//   than 10 are left, APP is dropped (the caller printed it already); then the bar; then
//   the line is cut to `width`.
// not tty: "APP: STATE (attempt N), containers: 3 done, 2 running, 5 pending" - no bar, no
//   elapsed time, so the line changes only when the state or the counts do.
std::string RenderProgress(const AppProgress& p, int width, bool tty);

// Decides what to write to stderr at each poll. On a terminal: "\r" and the rendered line,
// padded with spaces over what the previous one left (no escape sequences), every poll; on
// anything else: the plain line and "\n" when it differs from the last one written, at most
// one every `min_interval_ms` (a change that comes sooner is written at the first poll after).
class ProgressPrinter {
 public:
  ProgressPrinter(bool tty, int width, int64_t min_interval_ms = 2000)
      : tty_(tty), width_(width), min_interval_ms_(min_interval_ms) {}

  // What to write after a poll at `now_ms` (any monotonic clock, ms); "" for nothing.
  std::string Update(const AppProgress& p, int64_t now_ms);
  // What to write before the final line: on a terminal, "\r", spaces over the line and "\r"
  // (the line is cleared); otherwise "". Idempotent.
  std::string Finish();

 private:
  const bool tty_;
  const int width_;
  const int64_t min_interval_ms_;
  std::string last_;  // the last line written
  size_t drawn_ = 0;  // columns of the line on the terminal now
  int64_t last_write_ms_ = 0;
  bool wrote_ = false;
};

// The terminal's width in columns for `fd`, 80 when it cannot be read.
int TerminalWidth(int fd);

}  // namespace weft::cli

#endif  // WEFT_CLI_PROGRESS_H_
