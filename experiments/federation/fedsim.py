"""Part (c): `weft sim` over the same 50,000 nodes split into 1, 2, 5, 10 sub-clusters.

The workload (documented in the summary): the bundled Alibaba 2017 batch trace
(data/traces/alibaba2017_batch_task.csv, 11,644 jobs, 10.2 M task instances over ~17 h) on
50,000 nodes of <16 GB, 8 vcores> in 1,000 racks. The SWIM day at the README's defaults
loads 50,000 nodes to ~0.1%; the Alibaba trace loads them to 31% of vcores on time-weighted
average, 51% at p95 and 71% at p99 of the samples, with short bursts to 100% (pending work),
and a monolithic run takes ~30 s of wall time on this 2-core machine, so no time compression
or job multiplication is needed (weft sim has none; the trace is replayed as it is).

The policies see the load as the real daemons do (issue 27, "simulator realism"): each
sub-cluster RM publishes its load at its membership heartbeat, the router and the AMRMProxy read
it through a membership cache, each submission pays the store's latency on its home write and
read-back, and an unmanaged AM takes time to launch before it gets containers. STALENESS holds
the two settings used: Weft's daemon defaults (heartbeat 5 s, cache TTL 5 s) and YARN's
(yarn.federation.state-store.heartbeat-interval-secs 60 s, yarn.federation.cache-ttl.secs
300 s).

Series:
  scale-out   router load-based with in-flight accounting, Weft's staleness: AMRMProxy
              locality-multicast (headroom alpha 1) at N = 1 (monolithic), 2, 5, 10; and
              home-only (no spanning) at 2, 5 (10: in the herding series).
  herding     N = 10, router load-based with and without in-flight accounting (the router
              counting the homes it chose since the snapshot it reads), AMRMProxy home-only and
              locality-multicast, under Weft's and YARN's staleness.
Every run reports apps per RM including unmanaged AMs (the seed's bounded-load claim): apps
each RM held over the run, the most at once, and the spread across sub-clusters.
"""
import csv
import json
import os
import statistics
import subprocess
import time

NODES = 50000
RACKS = 1000
NODE_RESOURCES = "memory-mb=16384,vcores=8"
TRACE = "data/traces/alibaba2017_batch_task.csv"
COUNTS = [1, 2, 5, 10]
ROUTER_POLICY = "load-based"
AMRM_POLICY = "locality-multicast"
CONTRAST_AMRM = "home-only"
HERDING_N = 10
# What the policies see, and when (weft sim --subcluster-heartbeat-ms, --federation-cache-ttl-ms).
STALENESS = {
    "weft": {"subcluster_heartbeat_ms": 5000, "cache_ttl_ms": 5000},  # the daemons' defaults
    "yarn": {"subcluster_heartbeat_ms": 60000, "cache_ttl_ms": 300000},  # YARN's defaults
}
# Per state-store call on the submission path (router_bench on SQLite: 569 submissions/s, about
# 1.8 ms for the home write and its read-back), and the unmanaged AM's launch.
STORE_LATENCY_MS = 1
UAM_LAUNCH_MS = 1000


def sim_command(weft, root, n, amrm, out_dir, name, staleness="weft", in_flight=True):
    st = STALENESS[staleness]
    return [weft, "sim", "--workload", f"alibaba2017:{os.path.join(root, TRACE)}",
            "--nodes", str(NODES), "--racks", str(RACKS), "--node-resources", NODE_RESOURCES,
            "--policy", "fair", "--seed", "1", "--subclusters", str(n),
            "--router-policy", ROUTER_POLICY, "--amrm-policy", amrm, "--headroom-alpha", "1",
            "--subcluster-heartbeat-ms", str(st["subcluster_heartbeat_ms"]),
            "--federation-cache-ttl-ms", str(st["cache_ttl_ms"]),
            "--store-latency-ms", str(STORE_LATENCY_MS), "--uam-launch-ms", str(UAM_LAUNCH_MS),
            "--in-flight-accounting" if in_flight else "--no-in-flight-accounting",
            "--report", os.path.join(out_dir, f"{name}.json"),
            "--timeseries", os.path.join(out_dir, f"{name}.csv")]


def display(cmd, root):
    """The command as a user would type it from the repository's root."""
    return " ".join(c.replace(root + "/", "") for c in cmd)


def load_profile(csv_path):
    """Cluster-wide vcores/memory utilisation over the run's samples: mean, p95, p99, max."""
    with open(csv_path) as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for key in ("util_vcores", "util_memory-mb"):
        values = sorted(float(r[key]) for r in rows if r.get(key) not in (None, ""))
        if not values:
            continue
        pick = lambda p: values[min(len(values) - 1, int(p * (len(values) - 1)))]
        out[key.replace("util_", "")] = {
            "mean_of_samples": round(sum(values) / len(values), 4), "p95": round(pick(0.95), 4),
            "p99": round(pick(0.99), 4), "max": round(values[-1], 4),
            "share_of_samples_at_or_above_90pct": round(
                sum(1 for v in values if v >= 0.9) / len(values), 4)}
    return out


def figures(report, wall):
    fed = report.get("federation") or {}
    per = fed.get("per_sub_cluster") or []
    utils = [p["utilization"]["vcores"] for p in per if "utilization" in p]
    homed = [p.get("apps_homed", 0) for p in per]
    f = {
        "sub_clusters": fed.get("sub_clusters", 1),
        "makespan_s": report["makespan_s"],
        "mean_job_completion_s": round(report["job_completion_s"]["mean"], 2),
        "p95_job_completion_s": report["job_completion_s"]["p95"],
        "jobs": report["jobs"], "jobs_failed": report["jobs_failed"],
        "utilization_vcores": round(report["utilization"]["vcores"], 4),
        "jobs_spanning": fed.get("jobs_spanning", 0),
        "spanning_fraction": round(fed.get("spanning_fraction", 0.0), 4),
        # Monolithic: the one core's wall time; federated: every sub-cluster's core.
        "scheduler_wall_sum_s": round(fed.get("scheduler_wall_sum_s",
                                              report["scheduler_wall_s"]), 3),
        "scheduler_wall_max_s": round(fed.get("scheduler_wall_max_s",
                                              report["scheduler_wall_s"]), 3),
        "router_amrmproxy_wall_s": round(fed.get("federation_wall_s", 0.0), 3),
        "simulation_wall_s": round(report["total_wall_s"], 2),
        "process_wall_s": round(wall, 2),
        "allocations": report["allocations"],
    }
    if per:
        f["per_sub_cluster"] = [
            {"id": p["id"], "nodes": p["nodes"], "apps_homed": p.get("apps_homed"),
             "allocations": p.get("allocations"),
             "utilization_vcores": round(p["utilization"]["vcores"], 4),
             "utilization_memory_mb": round(p["utilization"]["memory-mb"], 4),
             "scheduler_wall_s": round(p["scheduler_wall_s"], 3)} for p in per]
    if len(utils) > 1 and min(utils) > 0:
        mean = statistics.fmean(utils)
        f["balance"] = {
            "utilization_vcores_max_over_min": round(max(utils) / min(utils), 4),
            "utilization_vcores_cv": round(statistics.pstdev(utils) / mean, 4),
            "apps_homed_max_over_min": round(max(homed) / max(1, min(homed)), 4),
            "apps_homed_cv": round(statistics.pstdev(homed) / statistics.fmean(homed), 4)}
    apr = fed.get("apps_per_rm")
    if apr:
        # Apps per RM including unmanaged AMs: over the run (apps), at once (peak), and the
        # time-weighted mean held; each max / mean / CV across sub-clusters.
        rnd = lambda d: {k: round(v, 4) for k, v in d.items()}
        f["apps_per_rm"] = {
            "apps": rnd(apr["apps"]), "homed": rnd(apr["homed"]), "peak": rnd(apr["peak"]),
            "held_mean": rnd(apr["mean"]), "uams": apr["uams"],
            "herding_homed_cv_over_time": round(apr["homed_cv_over_time"], 4)}
        if per:
            for p, q in zip(f["per_sub_cluster"], per):
                p.update({"uams": q.get("uams"), "apps": q.get("apps"),
                          "apps_peak": q.get("apps_peak"),
                          "apps_mean": round(q.get("apps_mean", 0.0), 3)})
    if fed.get("model"):
        f["model"] = fed["model"]
    return f


def plan_runs(counts, contrast):
    """(series, N, AMRMProxy policy, staleness, in-flight accounting, name) of every run."""
    plan = [("scale-out", n, AMRM_POLICY, "weft", True,
             f"n{n}" if n > 1 else "n1") for n in counts]
    if contrast:
        plan += [("scale-out", n, CONTRAST_AMRM, "weft", True, f"n{n}_{CONTRAST_AMRM}")
                 for n in counts if 1 < n < HERDING_N]
        for staleness in STALENESS:
            for amrm in (CONTRAST_AMRM, AMRM_POLICY):
                for in_flight in (False, True):
                    plan.append(("herding", HERDING_N, amrm, staleness, in_flight,
                                 f"h{HERDING_N}_{amrm}_{staleness}_"
                                 f"{'inflight' if in_flight else 'naive'}"))
    return plan


def run(weft, root, out_dir, here, log, contrast=True, counts=None):
    counts = counts or COUNTS
    os.makedirs(out_dir, exist_ok=True)
    runs = []
    for series, n, amrm, staleness, in_flight, name in plan_runs(counts, contrast):
        cmd = sim_command(weft, root, n, amrm, out_dir, name, staleness, in_flight)
        log(f"sim: {series}: {n} sub-cluster(s), AMRMProxy {amrm}, staleness {staleness}, "
            f"in-flight accounting {'on' if in_flight else 'off'} ...")
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        wall = time.time() - t0
        if r.returncode != 0:
            raise RuntimeError(f"weft sim failed ({r.returncode}): {r.stderr[-2000:]}")
        with open(os.path.join(out_dir, f"{name}.json")) as fh:
            report = json.load(fh)
        f = figures(report, wall)
        f["series"] = series
        f["amrm_policy"] = amrm if n > 1 else None
        f["router_policy"] = ROUTER_POLICY if n > 1 else None
        f["staleness"] = staleness if n > 1 else None
        f["in_flight_accounting"] = in_flight if n > 1 else None
        f["command"] = display(cmd, root)
        runs.append(f)
        apr = f.get("apps_per_rm", {})
        log(f"  makespan {f['makespan_s']:.0f} s, mean completion "
            f"{f['mean_job_completion_s']:.1f} s, spanning {f['spanning_fraction']:.1%}, "
            f"apps per RM max {apr.get('apps', {}).get('max', 0):.0f} (peak at once "
            f"{apr.get('peak', {}).get('max', 0):.0f}), core wall max "
            f"{f['scheduler_wall_max_s']:.2f} s ({wall:.0f} s)")
    mono = next(f for f in runs if f["sub_clusters"] == 1)
    for f in runs:
        f["vs_monolithic"] = {
            "makespan_ratio": round(f["makespan_s"] / mono["makespan_s"], 4),
            "mean_completion_ratio": round(f["mean_job_completion_s"] /
                                           mono["mean_job_completion_s"], 4),
            "scheduler_wall_max_ratio": round(f["scheduler_wall_max_s"] /
                                              max(1e-9, mono["scheduler_wall_max_s"]), 4)}
        if f.get("apps_per_rm") and mono.get("apps_per_rm"):
            f["vs_monolithic"]["apps_per_rm_max_ratio"] = round(
                f["apps_per_rm"]["apps"]["max"] / max(1, mono["apps_per_rm"]["apps"]["max"]), 4)
            f["vs_monolithic"]["apps_at_once_peak_ratio"] = round(
                f["apps_per_rm"]["peak"]["max"] / max(1, mono["apps_per_rm"]["peak"]["max"]), 4)
    log("sim: herding and apps per RM (incl. UAMs):\n" + herding_table(runs))
    plots = plot(runs, here, log)
    return {
        "status": "ran",
        "workload": {
            "trace": TRACE, "format": "alibaba2017", "nodes": NODES, "racks": RACKS,
            "node_resources": NODE_RESOURCES, "scheduler": "fair", "seed": 1,
            "jobs": mono["jobs"],
            "why": ("The SWIM FB-2009 day at the README's defaults loads 50,000 nodes to ~0.1%. "
                    "The bundled Alibaba 2017 batch trace (10.2 M task instances) replayed as "
                    "it is, with no time compression or job multiplication, loads the same "
                    "50,000 nodes substantially (see load_monolithic: time-weighted 31% of "
                    "vcores, p95 51%, p99 71%, brief bursts to 100%), and each run takes "
                    "30-45 s of wall time here."),
            "load_monolithic": load_profile(os.path.join(out_dir, "n1.csv")),
        },
        "model": {
            "staleness": STALENESS, "store_latency_ms": STORE_LATENCY_MS,
            "uam_launch_ms": UAM_LAUNCH_MS,
            "what": ("Each sub-cluster RM publishes its load every subcluster_heartbeat_ms "
                     "(staggered); the router and the AMRMProxy read those snapshots through a "
                     "membership cache reloaded when cache_ttl_ms old; a submission reaches its "
                     "home RM 2 x store_latency_ms after the router chose (home write and "
                     "read-back); asks to a secondary wait uam_launch_ms for its unmanaged AM. "
                     "In-flight accounting: the router counts the homes it chose since the "
                     "snapshot it reads (each at least its AM, at least the snapshot's mean "
                     "memory per app) against that sub-cluster's available memory."),
        },
        "series": {"scale-out": f"router {ROUTER_POLICY} with in-flight accounting, Weft "
                                f"staleness; AMRMProxy {AMRM_POLICY} (headroom alpha 1) and "
                                f"{CONTRAST_AMRM} (no spanning)",
                   "herding": (f"N = {HERDING_N}, router {ROUTER_POLICY} with and without "
                               f"in-flight accounting, AMRMProxy {CONTRAST_AMRM} and "
                               f"{AMRM_POLICY}, Weft and YARN staleness") if contrast else None},
        "apps_per_rm_definition": (
            "apps an RM held: apps homed there plus unmanaged AMs of apps homed elsewhere; "
            "apps = over the whole run, peak = most at once, held_mean = time-weighted mean; "
            "max / mean / cv across sub-clusters. herding_homed_cv_over_time: time-weighted "
            "mean of the CV across sub-clusters of the homed apps each RM held at that moment "
            "(noisy when few apps run at once; compare runs, not absolute values)."),
        "runs": runs,
        "plots": plots,
        "notes": ("Wall times are single runs on a shared 2-core machine (noise of about "
                  "10-20%). scheduler_wall_*: time inside the scheduling cores (monolithic: "
                  "the one core); router_amrmproxy_wall_s: the simulator's time in the "
                  "federation layer outside the cores (router and AMRMProxy policies, "
                  "merging, id mapping), sequential in the simulator; in a real federation "
                  "the cores run in parallel, so scheduler_wall_max_s bounds the busiest RM."),
    }


def herding_table(runs):
    lines = [f"  {'series':<9} {'N':>3} {'AMRMProxy':<18} {'stale':<5} {'in-flight':<9} "
             f"{'mean JCT s':>10} {'util cv':>7} {'apps/RM max':>11} {'mean':>7} {'cv':>6} "
             f"{'at once max':>11} {'mean':>6} {'cv':>6} {'UAMs':>7} {'herd cv':>7}"]
    for f in runs:
        apr = f.get("apps_per_rm") or {}
        a, pk = apr.get("apps", {}), apr.get("peak", {})
        cv = (f.get("balance") or {}).get("utilization_vcores_cv")
        flight = f.get("in_flight_accounting")
        lines.append(
            f"  {f.get('series', ''):<9} {f['sub_clusters']:>3} "
            f"{f.get('amrm_policy') or '(monolithic)':<18} {f.get('staleness') or '-':<5} "
            f"{'-' if flight is None else ('on' if flight else 'off'):<9} "
            f"{f['mean_job_completion_s']:>10.1f} {'-' if cv is None else f'{cv:.3f}':>7} "
            f"{a.get('max', 0):>11.0f} {a.get('mean', 0):>7.1f} {a.get('cv', 0):>6.3f} "
            f"{pk.get('max', 0):>11.0f} {pk.get('mean', 0):>6.1f} {pk.get('cv', 0):>6.3f} "
            f"{apr.get('uams', 0):>7} {apr.get('herding_homed_cv_over_time', 0):>7.3f}")
    return "\n".join(lines)


def plot(runs, here, log):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("sim: matplotlib not installed: no plots")
        return []
    # The scale-out curves: Weft's staleness, in-flight accounting on (the herding runs at
    # N = 10 with home-only and Weft's staleness close the home-only curve).
    scale = [f for f in runs if f.get("series") == "scale-out" or (
        f.get("staleness") == "weft" and f.get("in_flight_accounting") and
        f.get("amrm_policy") == CONTRAST_AMRM)]
    default = sorted((f for f in scale if f["sub_clusters"] == 1 or
                      f["amrm_policy"] == AMRM_POLICY), key=lambda f: f["sub_clusters"])
    contrast = [f for f in scale if f["sub_clusters"] == 1] + sorted(
        (f for f in scale if f["amrm_policy"] == CONTRAST_AMRM), key=lambda f: f["sub_clusters"])
    xs = lambda s: [f["sub_clusters"] for f in s]
    paths = []

    def save(fig, name):
        path = os.path.join(here, name)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(os.path.relpath(path, os.path.dirname(os.path.dirname(here))))

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for s, label, style in ((default, AMRM_POLICY, "o-"), (contrast, CONTRAST_AMRM, "s--")):
        if len(s) > 1:
            a1.plot(xs(s), [f["makespan_s"] / 3600 for f in s], style, label=label)
            a2.plot(xs(s), [f["mean_job_completion_s"] for f in s], style, label=label)
    a1.set(xlabel="sub-clusters (1 = monolithic)", ylabel="makespan (h)", xticks=COUNTS,
           title="Makespan")
    a2.set(xlabel="sub-clusters (1 = monolithic)", ylabel="mean job completion (s)",
           xticks=COUNTS, title="Mean job completion")
    for a in (a1, a2):
        a.set_ylim(0, 1.15 * max(line.get_ydata().max() for line in a.get_lines()))
        a.legend(title="AMRMProxy policy")
        a.grid(alpha=0.3)
    fig.suptitle(f"Alibaba 2017 trace on {NODES:,} nodes")
    save(fig, "makespan_completion.png")

    fig, a = plt.subplots(figsize=(5.5, 4))
    for s, label, style in ((default, AMRM_POLICY, "o-"), (contrast, CONTRAST_AMRM, "s--")):
        if len(s) > 1:
            a.plot(xs(s), [100 * f["spanning_fraction"] for f in s], style, label=label)
    a.set(xlabel="sub-clusters (1 = monolithic)", ylabel="jobs spanning >1 sub-cluster (%)",
          xticks=COUNTS, ylim=(-2, 102), title="Spanning jobs")
    a.legend(title="AMRMProxy policy")
    a.grid(alpha=0.3)
    save(fig, "spanning.png")

    fig, a = plt.subplots(figsize=(5.5, 4))
    a.plot(xs(default), [f["scheduler_wall_max_s"] for f in default], "o-",
           label="max over sub-clusters (busiest RM)")
    a.plot(xs(default), [f["scheduler_wall_sum_s"] for f in default], "^:",
           label="sum over sub-clusters")
    a.plot(xs(default), [f["router_amrmproxy_wall_s"] for f in default], "d-.",
           label="router + AMRMProxy")
    a.set(xlabel="sub-clusters (1 = monolithic)", ylabel="wall time (s)", xticks=COUNTS,
          title=f"Scheduler wall time ({AMRM_POLICY})")
    a.set_ylim(bottom=0)
    a.legend()
    a.grid(alpha=0.3)
    save(fig, "scheduler_wall.png")

    # Apps per RM including UAMs against N (the bounded-load claim), monolithic at N = 1.
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for s, label, style in ((default, AMRM_POLICY, "o-"), (contrast, CONTRAST_AMRM, "s--")):
        s = [f for f in s if f.get("apps_per_rm")]
        if len(s) > 1:
            a1.plot(xs(s), [f["apps_per_rm"]["apps"]["max"] for f in s], style, label=label)
            a2.plot(xs(s), [f["apps_per_rm"]["peak"]["max"] for f in s], style, label=label)
    a1.set(xlabel="sub-clusters (1 = monolithic)", ylabel="apps (homed + UAMs)", xticks=COUNTS,
           title="Apps per RM over the run (busiest RM)")
    a2.set(xlabel="sub-clusters (1 = monolithic)", ylabel="apps at once (homed + UAMs)",
           xticks=COUNTS, title="Apps per RM at once (busiest RM, peak)")
    for a in (a1, a2):
        a.set_ylim(bottom=0)
        if a.get_lines():
            a.legend(title="AMRMProxy policy")
        a.grid(alpha=0.3)
    save(fig, "apps_per_rm.png")

    # Herding: N = 10, with and without in-flight accounting, per staleness and AMRMProxy.
    herd = [f for f in runs if f.get("series") == "herding" and f.get("apps_per_rm")]
    if herd:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
        groups = [(st, amrm) for st in STALENESS for amrm in (CONTRAST_AMRM, AMRM_POLICY)]
        x = list(range(len(groups)))
        for k, (flight, label) in enumerate(((False, "without in-flight accounting"),
                                             (True, "with in-flight accounting"))):
            peak, herdcv = [], []
            for st, amrm in groups:
                f = next((g for g in herd if g["staleness"] == st and g["amrm_policy"] == amrm
                          and g["in_flight_accounting"] == flight), None)
                peak.append(f["apps_per_rm"]["peak"]["max"] if f else 0)
                herdcv.append(f["apps_per_rm"]["herding_homed_cv_over_time"] if f else 0)
            a1.bar([i + (k - 0.5) * 0.38 for i in x], peak, 0.38, label=label)
            a2.bar([i + (k - 0.5) * 0.38 for i in x], herdcv, 0.38, label=label)
        names = [f"{st}\n{amrm}" for st, amrm in groups]
        a1.set(xticks=x, xticklabels=names, ylabel="apps at once, busiest RM (peak)",
               title=f"Load-based homes, N = {HERDING_N}: peak apps per RM")
        a2.set(xticks=x, xticklabels=names, ylabel="CV across RMs of homed apps (time mean)",
               title="Herding (homed apps' spread over time)")
        for a in (a1, a2):
            a.legend(fontsize=8)
            a.grid(alpha=0.3, axis="y")
        save(fig, "herding.png")
    return paths
