"""The federation of experiments/chaos/federation: live.Federation (a SQLite federation store,
sub-cluster RMs on SQLite state, routers, a GPG) with several NMs per sub-cluster, each with the
AMRMProxy, two queues, and the scripts its apps run.

Optional flags of daemons still being built are passed only when the binary's --help lists
them (`flags_used` says which were).
"""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "federation"))
import live  # noqa: E402
from weftproc import (field, free_port, has_flag, help_text, json_lines, json_or,  # noqa: E402
                      kill9, tail, weft_cli)

# Two leaves in every sub-cluster: `default` (AMRMProxy home-only) and `span` (its asks split
# over every sub-cluster, so its apps have unmanaged AMs in secondaries).
SCHEDULER_YAML = """policy: fair
queues:
  root:
    children:
      default: {weight: 1}
      span: {weight: 1}
"""

# The AM: a bash wrapper around the distributed shell that writes the AM's start and end lines
# and a heartbeat (fedmarkers.py reads them). Args: MARKER WORK WEFT CONTAINERS TASK_S MEM_MB.
AM_SH = r"""m=$1; work=$2; weft=$3; n=$4; t=$5; mem=$6
where=${PWD#$work/nm-}; where=${where%%/*}; sc=${where%%-*}
ms() { date +%s%3N; }
app=$WEFT_APPLICATION_ID; att=$WEFT_APP_ATTEMPT_ID; me=am:$CONTAINER_ID
echo "$app $sc $me start $(ms) $where $att" >>"$m"
p=; h=
trap 'echo "$app $sc $me end $(ms) $where $att term" >>"$m"; kill $p $h 2>/dev/null; exit 143' TERM INT
( while :; do ms >"$m.hb.$CONTAINER_ID"; sleep 1; done ) & h=$!
"$weft" am shell --num-containers "$n" --memory-mb "$mem" \
  --command "/bin/bash $work/runs/task.sh $m $work $app $t" & p=$!
wait $p; rc=$?
kill $h 2>/dev/null
echo "$app $sc $me end $(ms) $where $att rc=$rc" >>"$m"
exit $rc
"""

# A container: start and end lines around a sleep. Args: MARKER WORK APP TASK_S.
TASK_SH = r"""m=$1; work=$2; app=$3; t=$4
where=${PWD#$work/nm-}; where=${where%%/*}; sc=${where%%-*}
wapp=${PWD%/*}; wapp=${wapp##*/}
ms() { date +%s%3N; }
echo "$app $sc $CONTAINER_ID start $(ms) $where $wapp" >>"$m"
s=
trap 'echo "$app $sc $CONTAINER_ID end $(ms) $where $wapp term" >>"$m"; kill $s 2>/dev/null; exit 143' TERM INT
sleep "$t" & s=$!
wait $s
echo "$app $sc $CONTAINER_ID end $(ms) $where $wapp" >>"$m"
"""


class ChaosFederation(live.Federation):
    """live.Federation (on `store`, a federation store URI, when given) with `nms_per_sc` NMs per
    sub-cluster (NM k of sub-cluster i is `<sc>-<k>`, work root WORK/nm-<sc>-<k>, restartable on the same port and work root), the
    queues above, membership expiry and GPG interval as given."""

    def __init__(self, weft, work, sub_clusters=3, nms_per_sc=2, routers=2,
                 node_resources="memory-mb=4096,vcores=4", expiry_ms=5000, gpg_interval_ms=1000,
                 nm_fence_ms=None, store=None, gpg_app_retention_ms=None, log=print):
        super().__init__(weft, work, sub_clusters=sub_clusters, routers=routers,
                         node_resources=node_resources, log=log)
        if store:  # e.g. zk://127.0.0.1:PORT/root?auth-file=FILE; else live's SQLite file
            self.store = store
        self.cgroup_hierarchy = f"weft-chaosfed-{self.rm_ports[0]}"
        self.expiry_ms, self.gpg_interval_ms = expiry_ms, gpg_interval_ms
        self.nm_sc = [i for i in range(sub_clusters) for _ in range(nms_per_sc)]
        self.nm_names = [f"{self.sc_ids[i]}-{k}" for i in range(sub_clusters)
                         for k in range(nms_per_sc)]
        self.nm_ports = [free_port() for _ in self.nm_names]
        self.nm_procs = [None] * len(self.nm_names)
        for port in self.nm_ports:
            self.issue("nm", f"127.0.0.1:{port}")
        self.runs = os.path.join(work, "runs")
        os.makedirs(self.runs, exist_ok=True)
        os.chmod(self.runs, 0o777)
        for name, text in (("am.sh", AM_SH), ("task.sh", TASK_SH),
                           ("scheduler.yaml", SCHEDULER_YAML)):
            with open(os.path.join(self.runs if name.endswith(".sh") else work, name), "w") as fh:
                fh.write(text)
        self.helps = {d: help_text(weft, [d]) or "" for d in ("rm", "nm", "router", "gpg")}
        self.helps["policy"] = help_text(weft, ["federation", "policy", "set"]) or ""
        self.flags_used = {}
        # weft nm --federation-fence-ms: its help's rule is fence + the NM heartbeat interval
        # (1000 ms) < the GPG's membership expiry - the RMs' --federation-heartbeat-ms (500 ms);
        # by default 500 ms below that.
        self.nm_fence_ms = (nm_fence_ms if nm_fence_ms is not None
                            else max(500, expiry_ms - 2000))
        self.stopped = set()  # RMs under SIGSTOP (index)
        self.gpg_app_retention_ms = gpg_app_retention_ms  # None: the GPG's default

    def optional(self, daemon, flag, value=None):
        """[flag, value] when `weft <daemon> --help` lists the flag, else [] (noted)."""
        ok = has_flag(self.helps.get(daemon, ""), flag)
        self.flags_used[f"{daemon} {flag}"] = ok
        return ([flag] + ([str(value)] if value is not None else [])) if ok else []

    def start_rm(self, i):
        args = ["rm", "--port", str(self.rm_ports[i]), "--http-port", str(self.rm_http[i]),
                "--state-store", os.path.join(self.work, f"rm-{self.sc_ids[i]}.db"),
                "--nm-expiry-ms", "20000", "--sub-cluster-id", self.sc_ids[i],
                "--federation-store", self.store, "--federation-heartbeat-ms", "500",
                "--scheduler-config", os.path.join(self.work, "scheduler.yaml")] + \
            self.tls("rm", self.sc_ids[i])
        self._note(f"rm-{self.sc_ids[i]}", args)
        self.rm_procs[i] = self._spawn(f"rm-{self.sc_ids[i]}", args)
        self.stopped.discard(i)

    def nm_log(self, k):
        return os.path.join(self.work, f"nm-{self.nm_names[k]}.log")

    def start_nm(self, k):
        i = self.nm_sc[k]
        node = f"127.0.0.1:{self.nm_ports[k]}"
        args = ["nm", "--rm", self.rm_addr(i), "--port", str(self.nm_ports[k]),
                "--http-port", "0", "--work-root", os.path.join(self.work, f"nm-{self.nm_names[k]}"),
                "--node-resources", self.node_resources, "--cgroup-hierarchy",
                self.cgroup_hierarchy, "--allowed-system-users", "root", "--amrmproxy",
                "--federation-store", self.store, "--sub-cluster-id", self.sc_ids[i]] + \
            self.optional("nm", "--federation-fence-ms", self.nm_fence_ms) + \
            self.tls("nm", node)
        self._note(f"nm-{self.nm_names[k]}", args)
        self.nm_procs[k] = self._spawn(f"nm-{self.nm_names[k]}", args)

    def start_router(self, j):
        args = ["router", "--router-id", self.router_ids[j], "--federation-store", self.store,
                "--port", str(self.router_ports[j]), "--http-port", str(self.router_http[j]),
                "--membership-expiry-ms", str(self.expiry_ms), "--cache-ttl-ms",
                str(min(1000, self.expiry_ms // 2))] + self.tls("router", self.router_ids[j])
        self._note(self.router_ids[j], args)
        self.router_procs[j] = self._spawn(self.router_ids[j], args)

    def start_gpg(self):
        args = ["gpg", "--federation-store", self.store, "--interval-ms",
                str(self.gpg_interval_ms), "--membership-expiry-ms", str(self.expiry_ms)] + \
            (["--app-retention-ms", str(self.gpg_app_retention_ms)]
             if self.gpg_app_retention_ms is not None else []) + self.tls("gpg", "gpg")
        self._note("gpg", args)
        self.gpg_proc = self._spawn("gpg", args)

    def named_procs(self):
        return ([(f"rm-{s}", p) for s, p in zip(self.sc_ids, self.rm_procs)] +
                [(f"nm-{n}", p) for n, p in zip(self.nm_names, self.nm_procs)] +
                list(zip(self.router_ids, self.router_procs)) + [("gpg", self.gpg_proc)])

    def dead(self):
        """A daemon that exited by itself (not killed here with -9), with its log's tail."""
        for name, p in self.named_procs():
            if p is not None and p.poll() is not None and p.returncode != -9:
                return f"{name} exited ({p.returncode}); its log ends with:\n" + \
                    tail(os.path.join(self.work, f"{name}.log"))
        return None

    def exited(self):
        """[(name, exit status)] of daemons that exited by themselves."""
        return [(name, p.returncode) for name, p in self.named_procs()
                if p is not None and p.poll() is not None and p.returncode != -9]

    def restart(self, name):
        """Starts the daemon `name` again (as named by named_procs)."""
        if name == "gpg":
            self.start_gpg()
        elif name in self.router_ids:
            self.start_router(self.router_ids.index(name))
        elif name.startswith("rm-"):
            self.start_rm(self.sc_ids.index(name[3:]))
        elif name.startswith("nm-"):
            self.start_nm(self.nm_names.index(name[3:]))

    def set_queue_policy(self, queue, router_policy, amrm_policy, extra=()):
        args = ["federation", "policy", "set", "--federation-store", self.store, "--queue",
                queue, "--router-policy", router_policy, "--amrm-policy", amrm_policy] + \
            list(extra) + self.optional("policy", "--resubmit-on-loss", "true")
        self._note(f"policy-{queue}", args)
        r = weft_cli(self.weft, self.env, args)
        if r.returncode != 0:
            raise RuntimeError(f"weft federation policy set --queue {queue}: {r.stderr.strip()}")

    def member_states(self):
        """sub-cluster id -> state (e.g. SC_RUNNING, SC_LOST) as the store has it."""
        return {field(m, "sub_cluster_id", "subClusterId"): str(field(m, "state", default=""))
                for m in self.members()}

    def running_nms(self, i):
        ns = live.nodes(self.weft, self.env, self.rm_addr(i)) or []
        return {field(n, "nodeId", "node_id") for n in ns if field(n, "state") == "NODE_RUNNING"}

    def start_all(self):
        for i in range(len(self.sc_ids)):
            self.start_rm(i)
        self.wait("the sub-cluster RMs", lambda: all(
            weft_cli(self.weft, self.env, ["node", "list", "--rm", self.rm_addr(i)],
                     timeout=10).returncode == 0 for i in range(len(self.sc_ids))), 60)
        for k in range(len(self.nm_names)):
            self.start_nm(k)
        want = [sum(1 for s in self.nm_sc if s == i) for i in range(len(self.sc_ids))]
        self.wait("every NM RUNNING", lambda: all(
            len(self.running_nms(i)) >= want[i] for i in range(len(self.sc_ids))), 90)
        self.wait("every sub-cluster in the federation store",
                  lambda: set(self.member_states()) >= set(self.sc_ids), 30)
        weights = ",".join(f"{sc}=1" for sc in self.sc_ids)
        self.set_queue_policy("*", "uniform", "home-only")
        self.set_queue_policy("span", "uniform", "locality-multicast",
                              ["--amrm-weights", weights, "--headroom-alpha", "0"])
        self.start_gpg()
        for j in range(len(self.router_ids)):
            self.start_router(j)
            self.wait(self.router_ids[j], lambda: self.router_answers(j), 30)

    def router_answers(self, j):
        return weft_cli(self.weft, self.env, ["app", "list", "--rm", self.router_addr(j),
                                              "--limit", "1"], timeout=10).returncode == 0

    def rm_answers(self, i):
        return weft_cli(self.weft, self.env, ["node", "list", "--rm", self.rm_addr(i)],
                        timeout=10).returncode == 0

    def sigstop_rm(self, i):
        p = self.rm_procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGSTOP)
            self.stopped.add(i)

    def sigcont_rm(self, i):
        p = self.rm_procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGCONT)
        self.stopped.discard(i)

    def list_apps(self, timeout=60):
        """The router's ListApplications (both routers, the first that answers): a list of app
        reports (JSON dicts), or None."""
        both = ",".join(self.router_addr(j) for j in range(len(self.router_ids)))
        r = weft_cli(self.weft, self.env, ["app", "list", "--rm", both, "--json"],
                     timeout=timeout)
        if r.returncode != 0:
            return None
        d = json_or(r.stdout, None)
        if isinstance(d, dict):
            return d.get("applications", [])
        return json_lines(r.stdout) or None

    def stop(self):
        for i in list(self.stopped):
            self.sigcont_rm(i)
        super().stop()

    def kill9_named(self, name):
        for n, p in self.named_procs():
            if n == name:
                kill9(p)
                return p
        return None

    def wait_bounded(self, check, limit_s, interval_s=0.3):
        """True when check() held within limit_s; never raises for a dead daemon."""
        deadline = time.time() + limit_s
        while time.time() < deadline:
            if check():
                return True
            time.sleep(interval_s)
        return False

    def logs_mentioning(self, needle, limit_per_log=6):
        """Lines of the daemons' logs that name `needle`: log name -> lines (the first few)."""
        out = {}
        for name, _ in self.named_procs():
            path = os.path.join(self.work, f"{name}.log")
            try:
                r = subprocess.run(["grep", "-m", str(limit_per_log), "-F", needle, path],
                                   capture_output=True, text=True, timeout=10)
            except subprocess.TimeoutExpired:
                continue
            lines = [l[:400] for l in r.stdout.splitlines()]
            if lines:
                out[name] = lines
        return out
