"""Helpers shared by the Weft-vs-Slurm harness: logging, child processes, bounded waits.

Conventions as experiments/chaos/run: every child gets SIGKILL when the harness dies
(PR_SET_PDEATHSIG), daemons are stopped with SIGTERM then SIGKILL after a bounded wait, and
every wait has a limit.
"""
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

try:
    _LIBC = ctypes.CDLL(None)  # loaded here, not in a forked child
except OSError:
    _LIBC = None


def log(*args):
    now = time.time()
    stamp = time.strftime("%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
    print(f"[bench {stamp}]", *args, file=sys.stderr, flush=True)


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the harness dies (PR_SET_PDEATHSIG = 1)."""
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""


def run(args, env=None, timeout=60):
    """subprocess.run with captured text output; a timeout becomes exit code 124."""
    try:
        return subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout,
                              preexec_fn=die_with_parent)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"timed out after {timeout} s")
    except OSError as e:
        return subprocess.CompletedProcess(args, 127, "", str(e))


def start(args, log_path, env=None, cwd=None):
    """A daemon in the background, stdout and stderr to log_path."""
    with open(log_path, "ab") as fh:
        return subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)


def stop(proc, limit_s=30):
    """SIGTERM, then SIGKILL once limit_s has passed. Safe on None and on ended processes."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def wait_until(pred, limit_s, interval_s=0.2):
    """Polls pred() until it returns a true value (returned) or limit_s passes (None)."""
    deadline = time.time() + limit_s
    while True:
        v = pred()
        if v:
            return v
        if time.time() >= deadline:
            return None
        time.sleep(interval_s)


def pids_named(comm):
    """Pids of processes whose /proc/PID/comm is `comm`."""
    out = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/comm") as fh:
                if fh.read().strip() == comm:
                    out.add(int(d))
        except OSError:
            pass
    return out
