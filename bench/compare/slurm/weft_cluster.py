"""A one-process Weft cluster (`weft dev`) of one node, and the workloads' Weft side.

The cluster is `weft dev --nodes 1 --node-resources memory-mb=M,vcores=C` on free loopback ports
with its data dir in the harness's work dir; as root it allows root's containers. Clients get
WEFT_RM and WEFT_TLS_CA from its output, as tests/lib/dev_cluster.sh does. Users are
authenticated by the system's munged (/run/munge), which the harness leaves alone.
"""
import concurrent.futures
import json
import os
import re
import time

from common import log, run, start, stop, tail, wait_until

TERMINAL = ("APP_FINISHED", "APP_FAILED", "APP_KILLED", "FINISHED", "FAILED", "KILLED")
POLL_S = 0.25  # as `weft app ... --wait` (src/cli/app_command.cc)


class WeftCluster:
    def __init__(self, weft, work, cpus, memory_mb):
        self.weft = weft
        self.dir = os.path.join(work, "weft")
        os.makedirs(self.dir, exist_ok=True)
        self.cpus = cpus
        self.memory_mb = memory_mb
        self.proc = None
        self.env = dict(os.environ)
        self.out = os.path.join(self.dir, "dev.out")

    def version(self):
        r = run([self.weft, "--version"], timeout=20)
        return (r.stdout or r.stderr).strip()

    def command_line(self):
        return [self.weft, "dev", "--nodes", "1", "--node-resources",
                f"memory-mb={self.memory_mb},vcores={self.cpus}", "--rm-port", "0",
                "--http-port", "0", "--data-dir", os.path.join(self.dir, "data"),
                "--allowed-system-users", "root"]

    def start(self, limit_s=60):
        """Starts `weft dev` and waits (bounded) for its addresses and one RUNNING node."""
        self.proc = start(self.command_line(), self.out)

        def addresses():
            if self.proc.poll() is not None:
                raise RuntimeError(f"weft dev exited ({self.proc.returncode}):\n"
                                   f"{tail(self.out)}")
            text = open(self.out, errors="replace").read()
            if "Ctrl-C" not in text:  # its last line: every address is printed
                return None
            rm = re.search(r"ResourceManager listening on ([0-9.]+:[0-9]+)", text)
            ca = re.search(r"cluster CA WEFT_TLS_CA=(\S+)", text)
            return (rm.group(1), ca.group(1) if ca else None) if rm else None

        found = wait_until(addresses, limit_s)
        if not found:
            raise RuntimeError(f"weft dev printed no addresses in {limit_s} s:\n{tail(self.out)}")
        self.env["WEFT_RM"] = found[0]
        if found[1]:
            self.env["WEFT_TLS_CA"] = found[1]

        def node_running():
            r = run([self.weft, "node", "list", "--state", "RUNNING"], env=self.env, timeout=10)
            return r.returncode == 0 and "RUNNING" in r.stdout

        if not wait_until(node_running, limit_s, 0.3):
            raise RuntimeError(f"no Weft node RUNNING after {limit_s} s:\n{tail(self.out)}")
        log(f"weft dev up: RM {found[0]}")

    def stop(self):
        stop(self.proc, limit_s=30)
        self.proc = None

    def drain(self, limit_s=30):
        """After a failed workload: kills every app not yet ended and waits (bounded) for it."""
        def live():
            r = run([self.weft, "app", "list", "--json", "--limit", "0"], env=self.env,
                    timeout=30)
            return [a.get("applicationId") for a in _apps(r.stdout)
                    if a.get("state") not in TERMINAL]

        for app_id in live():
            run([self.weft, "app", "kill", app_id], env=self.env, timeout=30)
        wait_until(lambda: not live(), limit_s, 0.5)

    # --- Workloads ------------------------------------------------------------------------------

    def run_shell_cmd(self, n, command, timeout_s):
        return [self.weft, "app", "run-shell", "--num-containers", str(n), "--command", command,
                "--memory-mb", "100", "--name", "bench", "--wait", "--timeout-s",
                str(int(timeout_s))]

    def tasks(self, groups, timeout_s):
        """groups: [(n, command)], one app each, all submitted at once. Returns (seconds from
        the first submission to the last app's end as its client saw it, errors)."""
        cmds = [self.run_shell_cmd(n, c, timeout_s) for n, c in groups]
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(len(cmds)) as pool:
            results = list(pool.map(lambda c: run(c, env=self.env, timeout=timeout_s + 30), cmds))
        elapsed = time.time() - t0
        errors = [f"{' '.join(r.args[:8])}...: exit {r.returncode}: "
                  f"{(r.stderr.strip() or r.stdout.strip())[-300:]}"
                  for r in results if r.returncode != 0]
        return elapsed, errors

    def submit_cmd(self, command):
        return [self.weft, "app", "submit", "--command", command, "--am-memory-mb", "100",
                "--name", "bench-job"]

    def separate(self, n, command, concurrency, timeout_s):
        """n one-task apps (`weft app submit --command CMD`: the AM runs CMD), submitted by
        `concurrency` clients at a time; then polls the RM every POLL_S until all have ended.
        Returns (seconds from the first submission to the moment all were seen ended, errors)."""
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(lambda _: run(self.submit_cmd(command), env=self.env,
                                                  timeout=60), range(n)))
        ids, errors = set(), []
        for r in results:
            m = re.search(r"application_\S+", r.stdout)
            if r.returncode == 0 and m:
                ids.add(m.group(0))
            else:
                errors.append(f"submit: exit {r.returncode}: {(r.stderr or r.stdout)[-200:]}")
        deadline = t0 + timeout_s
        final = {}
        while ids - final.keys() and time.time() < deadline:
            r = run([self.weft, "app", "list", "--json", "--limit", "0"], env=self.env,
                    timeout=30)
            for app in _apps(r.stdout):
                app_id = app.get("applicationId", app.get("application_id"))
                state = app.get("state", "")
                if app_id in ids and state in TERMINAL:
                    final[app_id] = (state, app.get("finalStatus", app.get("final_status")))
            if ids - final.keys():
                time.sleep(POLL_S)
        elapsed = time.time() - t0
        unfinished = ids - final.keys()
        if unfinished:
            errors.append(f"{len(unfinished)} apps not ended after {timeout_s} s")
        bad = [f"{a}: {s}" for a, s in final.items() if s[1] not in ("SUCCEEDED",
                                                                       "FINAL_SUCCEEDED")]
        if bad:
            errors.append(f"{len(bad)} apps did not succeed, e.g. {bad[0]}")
        return elapsed, errors


def _apps(text):
    try:
        d = json.loads(text)
    except ValueError:
        return []
    if isinstance(d, list):
        return d
    if isinstance(d, dict):
        for key in ("applications", "apps"):
            if isinstance(d.get(key), list):
                return d[key]
    return []
