"""Parts (a), (b), (d): live federations of real processes (see `run --help`).

Conventions as experiments/chaos/run: daemons are separate `weft` processes on 127.0.0.1 with
certificates from `weft certs`, readiness is polled (bounded), kills are SIGKILL, every child
dies with the harness (PR_SET_PDEATHSIG) and is stopped in a `finally`, and the NMs of a run
share a cgroup hierarchy of their own that is removed at the end.
"""
import concurrent.futures
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# The process helpers are shared with experiments/chaos (run, federation).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "chaos"))
from weftproc import (TERMINAL, field, free_port, help_text, json_lines, json_or,  # noqa: E402
                      kill9, missing, orphans, remove_cgroups, stop_procs, tail, weft_cli)
from weftproc import die_with_parent as _die_with_parent  # noqa: E402
from weftproc import percentile as pct  # noqa: E402,F401


def app_state(weft, env, rm, app_id, timeout=15):
    """(state, final status, home sub-cluster, diagnostics) of an app, or (None, ..., error)."""
    r = weft_cli(weft, env, ["app", "status", app_id, "--rm", rm, "--json"], timeout=timeout)
    if r.returncode != 0:
        return None, None, None, (r.stderr.strip() or r.stdout.strip())[-300:]
    d = json_or(r.stdout, {})
    d = d.get("application", d) if isinstance(d, dict) else {}
    return (field(d, "state"), field(d, "finalStatus", "final_status"),
            field(d, "subClusterId", "sub_cluster_id"), field(d, "diagnostics", default=""))


def nodes(weft, env, rm, timeout=10):
    r = weft_cli(weft, env, ["node", "list", "--rm", rm, "--json"], timeout=timeout)
    if r.returncode != 0:
        return None
    d = json_or(r.stdout, {})
    return d.get("nodes", []) if isinstance(d, dict) else []


def shell_command(runs_dir, name, sleep_s):
    """Each container appends its id and working directory (under its NM's work root) to a
    file of its app, then sleeps."""
    return f"echo $CONTAINER_ID $PWD >>{runs_dir}/{name}; sleep {sleep_s}"


def read_runs(path):
    out = []
    try:
        with open(path) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2:
                    out.append((parts[0], parts[1]))
    except OSError:
        pass
    return out


# --- A federation of separate processes (parts b and d) ---------------------------------------

class Federation:
    """A SQLite federation store, N sub-cluster RMs (each its own SQLite state), optionally one
    NM with the AMRMProxy per sub-cluster, routers and a GPG, each a `weft` process."""

    def __init__(self, weft, work, sub_clusters=3, routers=2, node_resources=
                 "memory-mb=4096,vcores=4", log=print):
        self.weft, self.work, self.log = weft, work, log
        self.pki = os.path.join(work, "pki")
        self.store = "sqlite:" + os.path.join(work, "federation.db")
        self.sc_ids = [f"sc{i + 1}" for i in range(sub_clusters)]
        self.rm_ports = [free_port() for _ in self.sc_ids]
        self.rm_http = [free_port() for _ in self.sc_ids]
        self.nm_ports = [free_port() for _ in self.sc_ids]
        self.router_ids = [f"router{j + 1}" for j in range(routers)]
        self.router_ports = [free_port() for _ in self.router_ids]
        self.router_http = [free_port() for _ in self.router_ids]
        self.node_resources = node_resources
        self.cgroup_hierarchy = f"weft-fed-{self.rm_ports[0]}"
        self.rm_procs = [None] * sub_clusters
        self.nm_procs = [None] * sub_clusters
        self.router_procs = [None] * routers
        self.gpg_proc = None
        self.env = dict(os.environ, WEFT_TLS_CA=os.path.join(self.pki, "ca.pem"))
        for k in ("WEFT_SECRET_FILE", "WEFT_RM"):
            self.env.pop(k, None)
        subprocess.run([weft, "certs", "init-ca", "--dir", self.pki], check=True,
                       capture_output=True, timeout=60)
        for sc in self.sc_ids:
            self.issue("rm", sc)
        for port in self.nm_ports:
            self.issue("nm", f"127.0.0.1:{port}")
        for rid in self.router_ids:
            self.issue("router", rid)
        self.issue("gpg", "gpg")

    def issue(self, role, name):
        subprocess.run([self.weft, "certs", "issue", "--ca-dir", self.pki, "--out-dir", self.pki,
                        "--role", role, "--name", name], check=True, capture_output=True,
                       timeout=60)

    def tls(self, role, name):
        base = os.path.join(self.pki, f"{role}-{name}")
        return ["--tls-ca", os.path.join(self.pki, "ca.pem"), "--tls-cert", base + ".pem",
                "--tls-key", base + ".key"]

    def rm_addr(self, i):
        return f"127.0.0.1:{self.rm_ports[i]}"

    def router_addr(self, j):
        return f"127.0.0.1:{self.router_ports[j]}"

    def _spawn(self, name, args):
        out = open(os.path.join(self.work, f"{name}.log"), "ab")
        proc = subprocess.Popen([self.weft] + args, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=out, env=self.env, preexec_fn=_die_with_parent)
        out.close()
        return proc

    def command_lines(self):
        """Each daemon's command line, for the summary (paths relative to the work dir)."""
        return getattr(self, "_commands", {})

    def _note(self, name, args):
        if not hasattr(self, "_commands"):
            self._commands = {}
        self._commands.setdefault(name, "weft " + " ".join(
            a.replace(self.work + "/", "$WORK/") for a in args))

    def start_rm(self, i):
        args = ["rm", "--port", str(self.rm_ports[i]), "--http-port", str(self.rm_http[i]),
                "--state-store", os.path.join(self.work, f"rm-{self.sc_ids[i]}.db"),
                "--nm-expiry-ms", "20000", "--sub-cluster-id", self.sc_ids[i],
                "--federation-store", self.store, "--federation-heartbeat-ms", "500"] + \
            self.tls("rm", self.sc_ids[i])
        self._note(f"rm-{self.sc_ids[i]}", args)
        self.rm_procs[i] = self._spawn(f"rm-{self.sc_ids[i]}", args)

    def start_nm(self, i):
        node = f"127.0.0.1:{self.nm_ports[i]}"
        args = ["nm", "--rm", self.rm_addr(i), "--port", str(self.nm_ports[i]),
                "--http-port", "0", "--work-root", os.path.join(self.work, f"nm-{self.sc_ids[i]}"),
                "--node-resources", self.node_resources, "--cgroup-hierarchy",
                self.cgroup_hierarchy, "--allowed-system-users", "root", "--amrmproxy",
                "--federation-store", self.store, "--sub-cluster-id", self.sc_ids[i]] + \
            self.tls("nm", node)
        if os.geteuid() != 0:
            args.append("--no-cgroups")
        self._note(f"nm-{self.sc_ids[i]}", args)
        self.nm_procs[i] = self._spawn(f"nm-{self.sc_ids[i]}", args)

    def start_router(self, j):
        args = ["router", "--router-id", self.router_ids[j], "--federation-store", self.store,
                "--port", str(self.router_ports[j]), "--http-port", str(self.router_http[j]),
                "--membership-expiry-ms", "5000", "--cache-ttl-ms", "1000"] + \
            self.tls("router", self.router_ids[j])
        self._note(self.router_ids[j], args)
        self.router_procs[j] = self._spawn(self.router_ids[j], args)

    def start_gpg(self):
        args = ["gpg", "--federation-store", self.store, "--interval-ms", "1000",
                "--membership-expiry-ms", "5000"] + self.tls("gpg", "gpg")
        self._note("gpg", args)
        self.gpg_proc = self._spawn("gpg", args)

    def set_policy(self, router_policy, amrm_policy):
        args = ["federation", "policy", "set", "--federation-store", self.store,
                "--router-policy", router_policy, "--amrm-policy", amrm_policy]
        self._note("policy", args)
        r = weft_cli(self.weft, self.env, args)
        if r.returncode != 0:
            raise RuntimeError(f"weft federation policy set: {r.stderr.strip()}")

    def all_procs(self):
        return ([self.gpg_proc] + self.router_procs + self.nm_procs + self.rm_procs)

    def dead(self):
        """A daemon that exited by itself, with its log's tail, or None."""
        named = ([(f"rm-{s}", p) for s, p in zip(self.sc_ids, self.rm_procs)] +
                 [(f"nm-{s}", p) for s, p in zip(self.sc_ids, self.nm_procs)] +
                 list(zip(self.router_ids, self.router_procs)) + [("gpg", self.gpg_proc)])
        for name, p in named:
            if p is not None and p.poll() is not None and p.returncode != -9:
                return f"{name} exited ({p.returncode}); its log ends with:\n" + \
                    tail(os.path.join(self.work, f"{name}.log"))
        return None

    def wait(self, what, check, limit_s):
        deadline = time.time() + limit_s
        while time.time() < deadline:
            d = self.dead()
            if d:
                raise RuntimeError(f"waiting for {what}: {d}")
            if check():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what}: not within {limit_s} s")

    def members(self):
        r = weft_cli(self.weft, self.env, ["federation", "subclusters", "--federation-store",
                                           self.store, "--json"], timeout=15)
        return json_lines(r.stdout) if r.returncode == 0 else []

    def homes(self):
        r = weft_cli(self.weft, self.env, ["federation", "homes", "--federation-store",
                                           self.store, "--json"], timeout=15)
        return {field(h, "application_id", "applicationId"):
                field(h, "home_sub_cluster_id", "homeSubClusterId")
                for h in (json_lines(r.stdout) if r.returncode == 0 else [])}

    def start(self, with_nms=True, routers=None, gpg=True, policy=("uniform",
                                                                   "locality-multicast")):
        for i in range(len(self.sc_ids)):
            self.start_rm(i)
        self.wait("the sub-cluster RMs", lambda: all(
            weft_cli(self.weft, self.env, ["node", "list", "--rm", self.rm_addr(i)],
                     timeout=10).returncode == 0 for i in range(len(self.sc_ids))), 60)
        if with_nms:
            for i in range(len(self.sc_ids)):
                self.start_nm(i)
            self.wait("one RUNNING NM per sub-cluster", lambda: all(
                any(field(n, "state") == "NODE_RUNNING" for n in
                    (nodes(self.weft, self.env, self.rm_addr(i)) or []))
                for i in range(len(self.sc_ids))), 60)
        self.wait("every sub-cluster in the federation store", lambda: {
            field(m, "sub_cluster_id", "subClusterId") for m in self.members()} >=
            set(self.sc_ids), 30)
        if policy:
            self.set_policy(*policy)
        if gpg:
            self.start_gpg()
        for j in range(len(self.router_ids) if routers is None else routers):
            self.start_router(j)
            self.wait(f"{self.router_ids[j]}", lambda: weft_cli(
                self.weft, self.env, ["app", "list", "--rm", self.router_addr(j)],
                timeout=10).returncode == 0, 30)

    def stop(self):
        stop_procs(self.all_procs())
        remove_cgroups(self.cgroup_hierarchy)


# --- (a) live spanning on `weft dev --subclusters 3` -------------------------------------------

def part_live(weft, args, log):
    why = missing(weft, [(["dev"], ["--subclusters"])])
    if why:
        return {"status": "skipped", "reason": why}
    if os.geteuid() != 0:
        return {"status": "skipped", "reason": "needs root (containers in cgroups)"}
    dev_help = help_text(weft, ["dev"]) or ""
    work = tempfile.mkdtemp(prefix="weft-fed-live-")
    os.chmod(work, 0o711)
    runs = os.path.join(work, "runs")
    os.makedirs(runs)
    os.chmod(runs, 0o777)
    # One small NM per sub-cluster: 4 vcores, so a sub-cluster holds 3 one-vcore containers
    # beside the AM.
    flags = ["dev", "--subclusters", "3", "--nodes", "1", "--node-resources",
             "memory-mb=4096,vcores=4", "--rm-port", "0", "--http-port", "0", "--data-dir",
             os.path.join(work, "data"), "--allowed-system-users", "root"]
    for extra in ("--router-port", "--router-http-port"):
        if extra in dev_help:
            flags += [extra, "0"]
    env = dict(os.environ)
    for k in ("WEFT_SECRET_FILE", "WEFT_RM"):
        env.pop(k, None)
    out_path, err_path = os.path.join(work, "dev.out"), os.path.join(work, "dev.err")
    proc = None
    block = {"status": "ran", "commands": {"dev": "weft " + " ".join(
        f.replace(work + "/", "$WORK/") for f in flags)}}
    try:
        with open(out_path, "wb") as o, open(err_path, "wb") as e:
            proc = subprocess.Popen([weft] + flags, stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                                    env=env, preexec_fn=_die_with_parent)
        deadline = time.time() + 90
        text = ""
        while time.time() < deadline:
            text = open(out_path, errors="replace").read()
            if "Ctrl-C" in text or proc.poll() is not None:
                break
            time.sleep(0.2)
        if "Ctrl-C" not in text:
            raise RuntimeError(f"weft dev did not start within 90 s:\n{text}\n{tail(err_path)}")
        block["dev_output"] = text.replace(work + "/", "$WORK/").splitlines()
        # The router's address: "router ... listening on ADDR", else the address the CLI is
        # told to use (WEFT_RM=..., the router once the CLI's default RM is the router), else
        # the first address on a line naming the router (not its web address).
        m = re.search(r"router[^\n]*?listening on (127\.0\.0\.1:\d+)", text, re.I)
        router = m.group(1) if m else None
        m = re.search(r"WEFT_RM=(127\.0\.0\.1:\d+)", text)
        if router is None and m:
            router = m.group(1)
        for line in text.splitlines():
            m = re.search(r"(?<!//)(127\.0\.0\.1:\d+)", line)
            if router is None and m and "router" in line.lower():
                router = m.group(1)
        ca = re.search(r"WEFT_TLS_CA=(\S+)", text)
        if router is None:
            raise RuntimeError("no router address in weft dev's output")
        env["WEFT_RM"] = router
        if ca:
            env["WEFT_TLS_CA"] = ca.group(1)
        block["router"] = router

        def sub_clusters_of_nodes():
            ns = nodes(weft, env, router) or []
            return {field(n, "nodeId", "node_id"): (field(n, "subClusterId", "sub_cluster_id"),
                                                    field(n, "state"), n) for n in ns}

        deadline = time.time() + 60
        seen = {}
        while time.time() < deadline:
            seen = sub_clusters_of_nodes()
            if len({sc for sc, st, _ in seen.values() if st == "NODE_RUNNING"}) >= 3:
                break
            time.sleep(0.5)
        per_sc_vcores = {}
        for sc, st, n in seen.values():
            v = int(((n.get("capability") or {}).get("values") or {}).get("vcores", 0))
            per_sc_vcores[sc] = per_sc_vcores.get(sc, 0) + v
        block["nodes_through_router"] = {nid: sc for nid, (sc, _, _) in seen.items()}
        block["vcores_per_sub_cluster"] = per_sc_vcores
        # More one-vcore containers than the biggest sub-cluster holds beside the AM.
        k = max(args.containers, max(per_sc_vcores.values() or [4]) + 1)
        command = shell_command(runs, "spanning", 4)
        shell = ["app", "run-shell", "--rm", router, "--num-containers", str(k), "--vcores", "1",
                 "--memory-mb", "256", "--command", command, "--name", "fed-spanning", "--wait",
                 "--timeout-s", "240"]
        block["commands"]["run_shell"] = "weft " + " ".join(
            (f"'{a}'" if " " in a else a).replace(work + "/", "$WORK/") for a in shell)
        block["containers_asked"] = k
        log(f"live: run-shell of {k} containers through the router {router}")
        started = time.time()
        sp = subprocess.Popen([weft] + shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env, preexec_fn=_die_with_parent)
        container_sc = {}  # container id -> sub-cluster (from the nodes' running containers)
        while sp.poll() is None and time.time() < started + 260:
            for nid, (sc, _, n) in sub_clusters_of_nodes().items():
                for c in n.get("containers") or []:
                    cid = field(c, "containerId", "container_id")
                    if cid:
                        container_sc[cid] = (sc, nid)
            time.sleep(0.5)
        if sp.poll() is None:
            sp.kill()
        stdout, stderr = sp.communicate(timeout=30)
        block["run_shell_exit"] = sp.returncode
        block["run_shell_s"] = round(time.time() - started, 1)
        app_id = next((w for w in stdout.split() if w.startswith("application_")), None)
        block["app_id"] = app_id
        state = app_state(weft, env, router, app_id) if app_id else (None,) * 3 + (stderr,)
        block["state"], block["final_status"], block["home_sub_cluster"] = state[:3]
        if state[3]:
            block["diagnostics"] = state[3][-500:]
        # Each container's sub-cluster: seen running on a node of it, else by its work root
        # (the NM directory above the app's) as learned from the containers that were seen.
        lines = read_runs(os.path.join(runs, "spanning"))
        root_sc = {}
        for cid, pwd in lines:
            if cid in container_sc:
                root_sc[os.path.dirname(os.path.dirname(pwd))] = container_sc[cid][0]
        per_sc, unattributed = {}, 0
        for cid, pwd in lines:
            sc = container_sc.get(cid, (None,))[0]
            if sc is None:
                sc = root_sc.get(os.path.dirname(os.path.dirname(pwd)))
            if sc == "":
                sc = "(no sub-cluster id)"
            if sc is None:
                unattributed += 1
            else:
                per_sc[sc] = per_sc.get(sc, 0) + 1
        block["containers_run"] = len(lines)
        block["containers_per_sub_cluster"] = dict(sorted(per_sc.items()))
        block["containers_unattributed"] = unattributed
        succeeded = sp.returncode == 0 and str(block["final_status"] or "").endswith("SUCCEEDED")
        block["pass"] = bool(succeeded and len(per_sc) >= 2 and len(lines) >= k)
        block["headline"] = (f"{app_id} {block['final_status'] or block['state']}, {len(lines)}"
                             f"/{k} containers, per sub-cluster {block['containers_per_sub_cluster']}"
                             f" (home {block['home_sub_cluster']}), {block['run_shell_s']} s")
        if not block["pass"]:
            block["reason"] = "; ".join(x for x in (
                None if succeeded else f"not SUCCEEDED (run-shell exit {sp.returncode}; "
                                       f"stderr: {stderr.strip()[-300:]})",
                None if len(per_sc) >= 2 else f"containers in {len(per_sc)} sub-cluster(s), "
                                              "not at least two",
                None if len(lines) >= k else f"{len(lines)} of {k} containers ran") if x)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        block.update(status="ran", **{"pass": False, "reason": str(e)[-1500:]})
    finally:
        stop_procs([proc])
        block["orphans"] = orphans(runs)
        if args.keep_work:
            log(f"live: work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return block


# --- (b) kill a router and a sub-cluster RM mid-run -------------------------------------------

KILL_NEEDS = [(["router"], ["--router-id", "--federation-store", "--membership-expiry-ms"]),
              (["rm"], ["--sub-cluster-id", "--federation-store", "--federation-heartbeat-ms"]),
              (["nm"], ["--amrmproxy", "--federation-store", "--sub-cluster-id"]),
              (["gpg"], ["--federation-store"]),
              (["federation", "homes"], ["--json"]),
              (["federation", "policy", "set"], ["--router-policy"])]


def part_kill(weft, args, log, task_s=8, containers=3, timeout_s=300):
    why = missing(weft, KILL_NEEDS)
    if why:
        return {"status": "skipped", "reason": why}
    if os.geteuid() != 0:
        return {"status": "skipped", "reason": "needs root (containers in cgroups)"}
    work = tempfile.mkdtemp(prefix="weft-fed-kill-")
    os.chmod(work, 0o711)
    runs = os.path.join(work, "runs")
    os.makedirs(runs)
    os.chmod(runs, 0o777)
    fed = None
    block = {"status": "ran"}
    try:
        fed = Federation(weft, work, log=log)
        fed.start()
        r1, r2 = fed.router_addr(0), fed.router_addr(1)
        both = f"{r1},{r2}"
        apps = {}  # app id -> name
        for n in range(args.kill_apps):
            name = f"app{n}"
            r = weft_cli(weft, fed.env, ["app", "run-shell", "--rm", r1, "--num-containers",
                                         str(containers), "--command",
                                         shell_command(runs, name, task_s), "--name",
                                         f"fedkill{n}", "--max-attempts", "2"], timeout=60)
            app_id = next((w for w in r.stdout.split() if w.startswith("application_")), None)
            if r.returncode != 0 or not app_id:
                raise RuntimeError(f"submitting through router1: {r.stderr.strip()[-500:]}")
            apps[app_id] = name
        log(f"kill: {len(apps)} apps submitted through router1")
        homes = {}
        deadline = time.time() + 30
        while time.time() < deadline:
            homes = {a: h for a, h in fed.homes().items() if a in apps}
            if len(homes) == len(apps):
                break
            time.sleep(0.5)
        by_home = {sc: sorted(a for a, h in homes.items() if h == sc) for sc in fed.sc_ids}
        # The victim: the sub-cluster with most apps homed, as long as others have some.
        victim = max(fed.sc_ids, key=lambda sc: (len(by_home[sc]) < len(apps),
                                                 len(by_home[sc])))
        vi = fed.sc_ids.index(victim)
        # Mid-run: containers have started writing.
        deadline = time.time() + 90
        while time.time() < deadline:
            started_runs = sum(len(read_runs(os.path.join(runs, n))) for n in apps.values())
            if started_runs >= max(2, len(apps)):
                break
            time.sleep(0.2)
        kill_at = time.time()
        kill9(fed.router_procs[0])
        kill9(fed.rm_procs[vi])
        log(f"kill: router1 and the RM of {victim} killed with -9 "
            f"({started_runs} containers had started)")
        block["killed"] = {"router": "router1", "sub_cluster_rm": victim,
                           "containers_started_before": started_runs}
        others = [a for a in apps if homes.get(a) != victim]
        theirs = [a for a in apps if homes.get(a) == victim]
        r = weft_cli(weft, fed.env, ["app", "list", "--rm", both], timeout=30)
        block["cli_router_list_after_kill"] = {"rm": "router1,router2", "exit": r.returncode,
                                               "stderr": r.stderr.strip()[-300:]}
        states = {}
        deadline = kill_at + timeout_s
        while time.time() < deadline:
            for a in others:
                if states.get(a, (None,))[0] not in TERMINAL:
                    states[a] = app_state(weft, fed.env, r2, a)
            if all(states[a][0] in TERMINAL for a in others):
                break
            time.sleep(1)
        block["others_done_s"] = round(time.time() - kill_at, 1)
        during = {a: app_state(weft, fed.env, r2, a) for a in theirs}
        # Then the killed RM comes back on its state store: what becomes of its apps.
        restart_at = time.time()
        fed.start_rm(vi)
        after = {}
        deadline = restart_at + 120
        while time.time() < deadline and theirs:
            after = {a: app_state(weft, fed.env, r2, a) for a in theirs}
            if all(s[0] in TERMINAL for s in after.values()):
                break
            time.sleep(1)
        # Containers per app and per sub-cluster (NM work roots are per sub-cluster).
        def sc_of(pwd):
            return next((sc for sc in fed.sc_ids
                         if pwd.startswith(os.path.join(work, f"nm-{sc}") + "/")), None)

        detail = {}
        for a, name in apps.items():
            lines = read_runs(os.path.join(runs, name))
            per = {}
            for _, pwd in lines:
                per[sc_of(pwd)] = per.get(sc_of(pwd), 0) + 1
            detail[a] = {"home": homes.get(a), "containers_per_sub_cluster": per,
                         "spanned_into_killed": victim in per and homes.get(a) != victim}
            s = states.get(a) if a in states else after.get(a) or during.get(a)
            detail[a]["final"] = {"state": s[0], "final_status": s[1],
                                  "diagnostics": (s[3] or "")[-300:]} if s else None
            if a in during:
                detail[a]["while_rm_down"] = {"state": during[a][0],
                                              "error_or_diagnostics": (during[a][3] or "")[-300:]}
        ok_others = [a for a in others if str(states.get(a, (None, None))[1] or "")
                     .endswith("SUCCEEDED")]
        block.update({
            "commands": fed.command_lines(),
            "apps": len(apps), "containers_per_app": containers, "task_s": task_s,
            "homes": {sc: len(v) for sc, v in by_home.items()},
            "homed_elsewhere": {"apps": len(others), "succeeded": len(ok_others),
                                "spanned_into_killed_sub_cluster": sum(
                                    1 for a in others if detail[a]["spanned_into_killed"])},
            "homed_in_killed": {
                "apps": len(theirs),
                "while_rm_down": sorted({str(during[a][0] or "unreachable") for a in theirs}),
                "after_rm_restart": {a: (after.get(a) or (None, None))[:2] for a in theirs},
                "rm_restarted_after_s": round(restart_at - kill_at, 1)},
            "apps_detail": detail,
        })
        block["pass"] = len(others) > 0 and len(ok_others) == len(others)
        block["headline"] = (f"{len(ok_others)}/{len(others)} apps homed outside {victim} "
                             f"SUCCEEDED after router1 and {victim}'s RM were killed; "
                             f"{victim}'s {len(theirs)} apps: after its RM restart "
                             f"{sorted({str((after.get(a) or (None, None))[1]) for a in theirs})}")
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        block.update(**{"pass": False, "reason": str(e)[-1500:]})
    finally:
        if fed is not None:
            block.setdefault("commands", fed.command_lines())
            fed.stop()
        block["orphans"] = orphans(runs)
        if args.keep_work:
            log(f"kill: work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return block


# --- (d) router submissions per second --------------------------------------------------------

def submit_burst(weft, env, rm, n, concurrency, tag):
    """n `weft app submit` processes against rm, `concurrency` at a time: (wall s, latencies,
    failures)."""
    def one(i):
        t0 = time.time()
        r = weft_cli(weft, env, ["app", "submit", "--rm", rm, "--command", "true", "--name",
                                 f"{tag}{i}", "--am-memory-mb", "128"], timeout=60)
        return time.time() - t0, r.returncode == 0, r.stderr.strip()[-200:]

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, range(n)))
    wall = time.time() - t0
    lat = [r[0] for r in results if r[1]]
    errors = [r[2] for r in results if not r[1]]
    return wall, lat, errors


def part_router(weft, args, log):
    why = missing(weft, [(["router"], ["--router-id", "--federation-store"]),
                         (["rm"], ["--sub-cluster-id", "--federation-store"]),
                         (["federation", "policy", "set"], ["--router-policy"])])
    if why:
        return {"status": "skipped", "reason": why}
    work = tempfile.mkdtemp(prefix="weft-fed-router-")
    os.chmod(work, 0o711)
    fed = None
    block = {"status": "ran"}
    try:
        fed = Federation(weft, work, routers=1, log=log)
        # No NMs and no GPG: the apps stay ACCEPTED, so nothing but submissions loads the
        # machine; the router policy is uniform (weights from headroom would be 0 without NMs).
        fed.start(with_nms=False, gpg=False)
        n, c = args.submissions, args.concurrency
        results = {}
        for label, rm in (("router", fed.router_addr(0)), ("rm_direct", fed.rm_addr(0))):
            weft_cli(weft, fed.env, ["app", "submit", "--rm", rm, "--command", "true"])  # warm
            wall, lat, errors = submit_burst(weft, fed.env, rm, n, c, f"sub-{label}-")
            results[label] = {
                "submitted": len(lat), "failed": len(errors), "wall_s": round(wall, 2),
                "submissions_per_s": round(len(lat) / wall, 1) if wall > 0 else None,
                "latency_s": {"p50": round(pct(lat, 50), 3) if lat else None,
                              "p99": round(pct(lat, 99), 3) if lat else None,
                              "mean": round(statistics.fmean(lat), 3) if lat else None},
                "first_error": errors[0] if errors else None}
            log(f"router: {label}: {len(lat)}/{n} in {wall:.1f} s = "
                f"{results[label]['submissions_per_s']}/s")
        homes = fed.homes()
        per_home = {}
        for h in homes.values():
            per_home[h] = per_home.get(h, 0) + 1
        rt, direct = results["router"], results["rm_direct"]
        block.update({
            "commands": fed.command_lines(),
            "submission": f"weft app submit --rm ADDR --command true --am-memory-mb 128, "
                          f"{n} of them, {c} at a time",
            "measures": ("Wall-clock rate of whole CLI submissions: each is a new `weft` "
                         "process (start-up, MUNGE credential, TLS handshake, GetNewApplication "
                         "+ SubmitApplication) on the same 2 cores as the daemons. The router's "
                         "own cost is the difference from `rm_direct` (the same submissions "
                         "to one sub-cluster RM); a bench program in-process would measure the "
                         "router alone."),
            "results": results, "homes_per_sub_cluster": per_home,
            "router_overhead_s_p50": (round(rt["latency_s"]["p50"] - direct["latency_s"]["p50"], 3)
                                      if rt["latency_s"]["p50"] and direct["latency_s"]["p50"]
                                      else None)})
        block["pass"] = rt["failed"] == 0 and rt["submitted"] == n
        block["headline"] = (f"{rt['submissions_per_s']}/s through the router vs "
                             f"{direct['submissions_per_s']}/s to one RM directly "
                             f"({n} CLI submissions, {c} at a time; p50 {rt['latency_s']['p50']}"
                             f" vs {direct['latency_s']['p50']} s)")
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        block.update(**{"pass": False, "reason": str(e)[-1500:]})
    finally:
        if fed is not None:
            block.setdefault("commands", fed.command_lines())
            fed.stop()
        if args.keep_work:
            log(f"router: work dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return block


def run_part(part, weft, args, log):
    return {"live": part_live, "kill": part_kill, "router": part_router}[part](weft, args, log)
