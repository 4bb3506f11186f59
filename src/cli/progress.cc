// Copyright Weft authors.
#include "cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft::cli {
namespace {

constexpr int kMinBar = 10;
constexpr int kMaxBar = 40;

std::string Counts(const AppProgress& p) {
  return absl::StrCat(p.done, " done, ", p.running, " running, ", p.pending, " pending");
}

// `cells` characters: '#' for the done share, '=' running, '.' pending; rounded so that a
// non-zero count shows at least one cell when there is room.
std::string Bar(const AppProgress& p, int cells) {
  const int64_t done = std::max<int64_t>(0, p.done);
  const int64_t running = std::max<int64_t>(0, p.running);
  const int64_t pending = std::max<int64_t>(0, p.pending);
  const int64_t total = done + running + pending;
  if (total == 0) return std::string(static_cast<size_t>(cells), '.');
  auto share = [&](int64_t n) {
    if (n == 0) return 0;
    return std::max(1, static_cast<int>(n * cells / total));
  };
  int d = std::min(cells, share(done));
  int r = std::min(cells - d, share(running));
  // What is left is pending; with nothing pending, done takes the rounding's rest.
  if (pending == 0) d = cells - r;
  const int rest = cells - d - r;
  return absl::StrCat(std::string(static_cast<size_t>(d), '#'),
                      std::string(static_cast<size_t>(r), '='),
                      std::string(static_cast<size_t>(rest), '.'));
}

}  // namespace

std::string RenderProgress(const AppProgress& p, int width, bool tty) {
  if (!tty)
    return absl::StrCat(p.app_id, ": ", p.state, " (attempt ", p.attempt,
                        "), containers: ", Counts(p));
  if (width < 1) width = 80;
  const std::string tail = absl::StrCat(" ", Counts(p), ", ", p.elapsed_s, "s");
  // The longest that fits: with the app id and a bar, without the id (an 80-column terminal
  // has no room for both: ids are 30 characters), without the bar, cut.
  for (const std::string& head : {absl::StrCat(p.app_id, " ", p.state, " "), p.state + " "}) {
    const int room = width - static_cast<int>(head.size() + tail.size()) - 2;  // the brackets
    if (room >= kMinBar) return absl::StrCat(head, "[", Bar(p, std::min(room, kMaxBar)), "]", tail);
  }
  std::string line = absl::StrCat(p.app_id, " ", p.state, tail);
  if (static_cast<int>(line.size()) > width) line = absl::StrCat(p.state, tail);
  if (static_cast<int>(line.size()) > width) line.resize(static_cast<size_t>(width));
  return line;
}

std::string ProgressPrinter::Update(const AppProgress& p, int64_t now_ms) {
  const std::string line = RenderProgress(p, width_, tty_);
  if (tty_) {
    std::string out = absl::StrCat("\r", line);
    if (drawn_ > line.size()) out.append(drawn_ - line.size(), ' ');
    drawn_ = line.size();
    last_ = line;
    wrote_ = true;
    return out;
  }
  if (wrote_ && (line == last_ || now_ms - last_write_ms_ < min_interval_ms_)) return "";
  last_ = line;
  last_write_ms_ = now_ms;
  wrote_ = true;
  return line + "\n";
}

std::string ProgressPrinter::Finish() {
  if (!tty_ || drawn_ == 0) return "";
  std::string out = absl::StrCat("\r", std::string(drawn_, ' '), "\r");
  drawn_ = 0;
  return out;
}

int TerminalWidth(int fd) {
  struct winsize ws {};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace weft::cli
