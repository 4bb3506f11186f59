// Copyright Weft authors. `weft transfer send|sink`: the bulk TCP sender and receiver of the
// transfer job (seed 000's TestDFSIO-like experiment), measuring throughput per second.
#include "cli/transfer_command.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/errors.h"
#include "cli/cli_common.h"
#include "common/terminal_text.h"

namespace weft::cli {
namespace {

// The first line a sender writes: "WEFT-TRANSFER <label>\n".
constexpr char kHello[] = "WEFT-TRANSFER ";
constexpr size_t kMaxHello = 300;

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "host:port" -> a resolved IPv4/IPv6 address.
absl::StatusOr<std::pair<sockaddr_storage, socklen_t>> Resolve(const std::string& address,
                                                                bool passive) {
  size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", address, "' is not HOST:PORT"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), absl::StrCat(port).c_str(), &hints,
                       &result);
  if (rc != 0 || result == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", address, "': ", gai_strerror(rc)));
  }
  std::pair<sockaddr_storage, socklen_t> out{};
  std::memcpy(&out.first, result->ai_addr, result->ai_addrlen);
  out.second = result->ai_addrlen;
  freeaddrinfo(result);
  return out;
}

struct SendFlags {
  std::string to;
  double megabytes = 0;
  double seconds = 0;
  std::string label;
  int interval_ms = 1000;
};

// Connects, sends the hello line, then bytes until the amount or time is reached; closes its
// side and waits for the receiver to close (so the end means everything was received).
// Prints one JSON line per interval and a summary line.
int Send(const SendFlags& f) {
  if ((f.megabytes > 0) == (f.seconds > 0))
    return PrintError("give exactly one of --megabytes and --seconds (both > 0)");
  if (f.interval_ms <= 0) return PrintError("--interval-ms must be > 0");
  std::string label = f.label;
  if (label.empty()) {
    const char* id = std::getenv("CONTAINER_ID");
    label = id != nullptr ? id : absl::StrCat("pid-", getpid());
  }
  if (label.find_first_of(" \n\r") != std::string::npos || label.size() > 200)
    return PrintError(absl::StrCat("--label '", label, "' must be a word of at most 200 bytes"));
  auto address = Resolve(f.to, /*passive=*/false);
  if (!address.ok()) return PrintError(address.status().message());
  int fd = socket(address->first.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return PrintError(ErrnoMessage(errno, "socket"));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address->first), address->second) != 0) {
    std::string error = ErrnoMessage(errno, absl::StrCat("connecting to ", f.to));
    close(fd);
    return PrintError(error);
  }
  const std::string hello = absl::StrCat(kHello, label, "\n");
  if (write(fd, hello.data(), hello.size()) != static_cast<ssize_t>(hello.size())) {
    close(fd);
    return PrintError(ErrnoMessage(errno, "sending the hello line"));
  }
  const int64_t total_bytes =
      f.megabytes > 0 ? static_cast<int64_t>(f.megabytes * 1'000'000) : INT64_MAX;
  std::vector<char> chunk(64 * 1024, 'w');
  const double start = NowS();
  const double interval_s = f.interval_ms / 1000.0;
  double next_report = start + interval_s;
  int64_t sent = 0, sent_at_report = 0;
  while (sent < total_bytes) {
    const double now = NowS();
    if (f.seconds > 0 && now - start >= f.seconds) break;
    if (now >= next_report) {
      std::cout << absl::StrFormat("{\"label\":\"%s\",\"t_s\":%.1f,\"bytes\":%d,\"mbps\":%.2f}\n",
                                   label, now - start, sent,
                                   (sent - sent_at_report) * 8 / interval_s / 1e6)
                << std::flush;
      sent_at_report = sent;
      next_report += interval_s;
    }
    size_t n = static_cast<size_t>(std::min<int64_t>(chunk.size(), total_bytes - sent));
    ssize_t w = send(fd, chunk.data(), n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      std::string error = ErrnoMessage(errno, "sending");
      close(fd);
      return PrintError(error);
    }
    sent += w;
  }
  // Everything is queued; the receiver closes once it has read it all.
  shutdown(fd, SHUT_WR);
  char sink[256];
  while (read(fd, sink, sizeof(sink)) > 0) {
  }
  close(fd);
  const double elapsed = NowS() - start;
  std::cout << absl::StrFormat(
                   "{\"label\":\"%s\",\"done\":true,\"bytes\":%d,\"seconds\":%.3f,\"mbps\":%.2f}\n",
                   label, sent, elapsed, elapsed > 0 ? sent * 8 / elapsed / 1e6 : 0.0)
            << std::flush;
  return 0;
}

struct SinkFlags {
  std::string listen = "0.0.0.0:5301";
  std::string csv;
  double seconds = 0;
};

volatile sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

// Accepts any number of senders and counts what each label sends per second. CSV rows:
// second,label,bytes,mbps (second = whole seconds since the sink started; one row per label
// that had a connection open or sent bytes in that second). A label is what a peer sent,
// escaped (common/terminal_text.h): it cannot control a terminal the CSV is printed on.
int Sink(const SinkFlags& f) {
  auto address = Resolve(f.listen, /*passive=*/true);
  if (!address.ok()) return PrintError(address.status().message());
  int listener = socket(address->first.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return PrintError(ErrnoMessage(errno, "socket"));
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(listener, reinterpret_cast<const sockaddr*>(&address->first), address->second) != 0 ||
      listen(listener, 512) != 0) {
    std::string error = ErrnoMessage(errno, absl::StrCat("listening on ", f.listen));
    close(listener);
    return PrintError(error);
  }
  std::ofstream csv;
  std::ostream* out = &std::cout;
  if (!f.csv.empty()) {
    csv.open(f.csv, std::ios::trunc);
    if (!csv) return PrintError(absl::StrCat("cannot write --csv '", f.csv, "'"));
    out = &csv;
  }
  *out << "second,label,bytes,mbps\n" << std::flush;
  std::cerr << "weft transfer sink: listening on " << f.listen << std::endl;
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  struct Conn {
    std::string hello;  // until the newline
    std::string label;  // once known
  };
  std::map<int, Conn> conns;
  std::map<std::string, int64_t> second_bytes;  // label -> bytes this second
  const double start = NowS();
  int64_t second = 0;
  std::vector<char> buffer(256 * 1024);
  auto flush_second = [&] {
    for (const auto& [fd, conn] : conns) {
      if (!conn.label.empty()) second_bytes[conn.label] += 0;
    }
    for (const auto& [label, bytes] : second_bytes) {
      *out << second << "," << EscapeForTerminal(label) << "," << bytes << ","
           << absl::StrFormat("%.3f", bytes * 8 / 1e6) << "\n";
    }
    out->flush();
    second_bytes.clear();
    ++second;
  };
  while (!g_stop) {
    const double now = NowS();
    if (f.seconds > 0 && now - start >= f.seconds) break;
    while (now - start >= second + 1) flush_second();
    std::vector<pollfd> fds = {{listener, POLLIN, 0}};
    for (const auto& [fd, conn] : conns) fds.push_back({fd, POLLIN, 0});
    int timeout_ms = static_cast<int>((start + second + 1 - now) * 1000) + 1;
    int ready = poll(fds.data(), fds.size(), std::max(1, timeout_ms));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return PrintError(ErrnoMessage(errno, "poll"));
    }
    if (fds[0].revents & POLLIN) {
      int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) conns[fd] = Conn{};
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      int fd = fds[i].fd;
      Conn& conn = conns[fd];
      ssize_t n = read(fd, buffer.data(), buffer.size());
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        close(fd);
        conns.erase(fd);
        continue;
      }
      size_t offset = 0;
      if (conn.label.empty()) {
        for (; offset < static_cast<size_t>(n); ++offset) {
          if (buffer[offset] == '\n') break;
          conn.hello.push_back(buffer[offset]);
        }
        if (offset == static_cast<size_t>(n)) {
          if (conn.hello.size() > kMaxHello) {  // not one of ours
            close(fd);
            conns.erase(fd);
          }
          continue;
        }
        ++offset;  // the newline
        conn.label = conn.hello.rfind(kHello, 0) == 0 ? conn.hello.substr(strlen(kHello))
                                                      : std::string("unlabelled");
      }
      second_bytes[conn.label] += n - static_cast<ssize_t>(offset);
    }
  }
  flush_second();
  for (const auto& [fd, conn] : conns) close(fd);
  close(listener);
  return 0;
}

}  // namespace

void AddTransferCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "transfer", "Bulk TCP transfers measured per second (the transfer job's sender and sink)");
  group->require_subcommand(1);
  {
    auto f = std::make_shared<SendFlags>();
    CLI::App* cmd = group->add_subcommand(
        "send", "Send bytes to a sink; prints {label,t_s,bytes,mbps} per interval and a summary");
    cmd->add_option("--to", f->to, "the sink, HOST:PORT")->required();
    cmd->add_option("--megabytes", f->megabytes, "send this many MB (10^6 bytes)")
        ->check(FiniteNumberValidator("MB", 0, 1e12));
    cmd->add_option("--seconds", f->seconds, "or send for this long")
        ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
    cmd->add_option("--label", f->label, "name in the sink's CSV (default: $CONTAINER_ID)");
    cmd->add_option("--interval-ms", f->interval_ms, "between progress lines")
        ->capture_default_str();
    cmd->callback([f, exit_code] { *exit_code = Send(*f); });
  }
  {
    auto f = std::make_shared<SinkFlags>();
    CLI::App* cmd = group->add_subcommand(
        "sink", "Receive from any number of senders; CSV second,label,bytes,mbps per second");
    cmd->add_option("--listen", f->listen, "HOST:PORT to listen on")->capture_default_str();
    cmd->add_option("--csv", f->csv, "write the CSV here (default: stdout)");
    cmd->add_option("--seconds", f->seconds, "stop after this long (0 = at SIGTERM/SIGINT)")
        ->capture_default_str()
        ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
    cmd->callback([f, exit_code] { *exit_code = Sink(*f); });
  }
}

}  // namespace weft::cli
