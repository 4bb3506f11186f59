"""Helpers shared by the harnesses that run real `weft` processes: experiments/chaos/run,
experiments/chaos/federation and experiments/federation/live.py.

Conventions: every child gets SIGKILL when the harness dies (PR_SET_PDEATHSIG), every wait is
bounded, kills are SIGKILL, and a daemon's flags are detected from its --help so that a harness
runs against whatever binary it is given.
"""
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

TERMINAL = ("APP_FINISHED", "APP_FAILED", "APP_KILLED")
ZK_JARS = ["/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"]

try:
    _LIBC = ctypes.CDLL(None)  # loaded here, not in a forked child
except OSError:
    _LIBC = None


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the harness dies (PR_SET_PDEATHSIG = 1)."""
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A standby RM's web answers 307 to the active: that answer is what we want to see."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


# No proxy (the cluster is on loopback) and no redirects.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def http_get(url, timeout=2.0):
    """(status, body) of GET url; status None when nothing answered."""
    try:
        with _HTTP.open(url, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, ""
    except (OSError, ValueError):
        return None, ""


# --- What the binary has ----------------------------------------------------------------------

def help_text(weft, sub):
    """`weft SUB... --help` when SUB is a real subcommand, else None (an unknown subcommand
    prints the top-level help and exits 0, so the Usage line is what tells)."""
    try:
        r = subprocess.run([weft] + sub + ["--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = r.stdout + r.stderr
    usage = next((l for l in text.splitlines() if l.startswith("Usage:")), "")
    if r.returncode != 0 or not usage.split()[1:] or \
            " ".join(usage.split()[2:2 + len(sub)]) != " ".join(sub):
        return None
    return text


def has_flag(text, flag):
    """Whether a --help text lists `flag`."""
    return bool(text) and bool(
        re.search(rf"(^|[\s,]){re.escape(flag)}(?=[\s=,]|$)", text, re.M))


def missing(weft, needs):
    """needs: [(subcommand list, [flags])]. The first missing piece, described, or None."""
    for sub, flags in needs:
        text = help_text(weft, sub)
        if text is None:
            return f"`weft {' '.join(sub)}` is not in this binary yet"
        for flag in flags:
            if not has_flag(text, flag):
                return f"`weft {' '.join(sub)}` has no {flag} yet"
    return None


# --- The CLI and its JSON ---------------------------------------------------------------------

def weft_cli(weft, env, args, timeout=30):
    try:
        return subprocess.run([weft] + args, capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"timed out after {timeout} s")


def json_or(text, default):
    try:
        return json.loads(text)
    except ValueError:
        return default


def json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            v = json_or(line, None)
            if v is not None:
                out.append(v)
    return out


def field(d, *names, default=None):
    """A protobuf JSON field under its camelCase or proto name."""
    for n in names:
        if n in d:
            return d[n]
    return default


# --- Processes --------------------------------------------------------------------------------

def kill9(proc):
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def stop_procs(procs, limit_s=30):
    """SIGTERM to every live process of `procs`, then SIGKILL to those still alive after
    limit_s (all together)."""
    procs = [p for p in procs if p is not None and p.poll() is None]
    for p in procs:
        p.send_signal(signal.SIGTERM)
    deadline = time.time() + limit_s
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=30)


def orphans(pattern):
    """Container processes still alive whose command line names `pattern`; killed."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True,
                           text=True).stdout.split()
    found = [p for p in found if int(p) != os.getpid()]
    for pid in found:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
    return len(found)


def remove_cgroups(hierarchy):
    """Removes the (empty) cgroups of an NM hierarchy, deepest first."""
    for path in sorted(glob.glob(f"/sys/fs/cgroup/{hierarchy}") +
                       glob.glob(f"/sys/fs/cgroup/*/{hierarchy}") +
                       glob.glob(f"/sys/fs/cgroup/{hierarchy}/**/", recursive=True),
                       key=len, reverse=True):
        try:
            os.rmdir(path)
        except OSError:
            pass


# --- ZooKeeper -----------------------------------------------------------------------------

class ZooKeeper:
    """A standalone ZooKeeper server of the run's own, restartable on the same port and data."""

    def __init__(self, work, port):
        self.dir = os.path.join(work, "zk")
        self.port = port
        self.proc = None
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        self.config = os.path.join(self.dir, "zoo.cfg")
        # tickTime 500 ms: sessions of 1 s to 30 s (the RMs ask for 1.5 s).
        with open(self.config, "w") as fh:
            fh.write(f"tickTime=500\ndataDir={self.dir}/data\nclientPort={port}\n"
                     "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\n"
                     "minSessionTimeout=1000\nmaxSessionTimeout=30000\n"
                     "admin.enableServer=false\n4lw.commands.whitelist=srvr,ruok\n")

    @staticmethod
    def check_installed():
        """None when java and the Debian zookeeper jar are there, else what is missing."""
        if shutil.which("java") is None and not os.path.exists(
                os.path.join(os.environ.get("JAVA_HOME", "/nonexistent"), "bin", "java")):
            return "no java on PATH (install the Debian packages default-jre-headless zookeeper)"
        if not os.path.exists(ZK_JARS[0]):
            return f"no {ZK_JARS[0]} (install the Debian package zookeeper)"
        return None

    def start(self, limit_s=90):
        java = shutil.which("java") or os.path.join(os.environ["JAVA_HOME"], "bin", "java")
        classpath = ":".join(j for j in ZK_JARS if os.path.exists(j))
        out = open(os.path.join(self.dir, "zookeeper.log"), "ab")
        self.proc = subprocess.Popen(
            [java, "-Xms16m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Djava.net.preferIPv4Stack=true", "-Dzookeeper.admin.enableServer=false",
             "-Dzookeeper.4lw.commands.whitelist=srvr,ruok", "-Dzookeeper.preAllocSize=1024",
             "-Dzookeeper.snapshot.trust.empty=true", "-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-cp", classpath,
             "org.apache.zookeeper.server.ZooKeeperServerMain", self.config],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, preexec_fn=die_with_parent)
        out.close()
        deadline = time.time() + limit_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited ({self.proc.returncode}) before it served; "
                                   f"its log ends with:\n{tail(self.dir + '/zookeeper.log')}")
            if self.ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"ZooKeeper did not serve on 127.0.0.1:{self.port} within {limit_s} s; "
                           f"its log ends with:\n{tail(self.dir + '/zookeeper.log')}")

    def ready(self):
        """The four-letter word `srvr` answers with the server's mode (it serves clients)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"srvr")
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            return b"Mode:" in data
        except OSError:
            return False

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
