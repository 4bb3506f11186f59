"""Marker files of experiments/chaos/federation, and what they say about each app.

Every app of a run has one marker file. Its AM (a bash wrapper around `weft am shell`) and each
of its containers append one line when they start and one when they end:

  AM:        <app_id> <sub_cluster> am:<container_id> start|end <unix_ms> <nm> <attempt_id> [how]
  container: <app_id> <sub_cluster> <container_id> start|end <unix_ms> <nm> <work_app_id> [how]

<sub_cluster> and <nm> come from the process's working directory (under the work root of the
NM that ran it, `nm-<sub_cluster>-<k>`); <work_app_id> is the app directory the NM gave the
container (the home app's id, or an unmanaged AM's id in a secondary); `how` is `rc=N` (the
AM's exit status) or `term` (it got SIGTERM). An AM also rewrites `<marker>.hb.<container_id>`
with the time every second, so an AM killed with SIGKILL (no end line) ended at most a second
after its last heartbeat.

A *copy* of an app is one AM run: the sub-cluster its AM ran in is where that copy is homed.
An app runs in two sub-clusters at once when AM runs in two different sub-clusters overlap in
time; containers in secondaries (unmanaged AMs) are the same copy and do not count.
Pure: no processes, no clock (the caller passes what it needs).
"""
import glob
import os
import re

GRACE_MS = 1000  # an open interval ends this long after the last thing that proves it alive


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def read_heartbeat(path):
    """The last heartbeat (unix ms) an AM wrote, or None."""
    try:
        with open(path) as fh:
            return _int(fh.read().strip())
    except OSError:
        return None


def parse(path, task_ms):
    """The runs in one marker file: a list of dicts with kind ('am' or 'task'), app, sc, nm,
    container, start, end (unix ms), open (no end line: end is inferred), how, attempt (AMs),
    work_app (containers) and starts (how many start lines it had; > 1 is a container that ran
    twice). A run is one container id of one kind in one sub-cluster: the same id in two
    sub-clusters is two runs (ids that collide across sub-clusters, reported by analyze).
    task_ms: how long a container runs when nothing stops it."""
    runs = {}
    try:
        fh = open(path, errors="replace")
    except OSError:
        return []
    with fh:
        for line in fh:
            parts = line.split()
            if len(parts) < 5 or parts[3] not in ("start", "end"):
                continue
            app, sc, cid, what, ms = parts[:5]
            ms = _int(ms)
            if ms is None:
                continue
            kind = "am" if cid.startswith("am:") else "task"
            cid = cid[3:] if kind == "am" else cid
            rest = parts[5:]
            run = runs.setdefault((kind, sc, cid), {"kind": kind, "app": app, "sc": sc, "container": cid,
                                        "nm": rest[0] if rest else None, "start": None,
                                        "end": None, "how": None, "starts": 0})
            if kind == "am":
                run["attempt"] = rest[1] if len(rest) > 1 else None
            else:
                run["work_app"] = rest[1] if len(rest) > 1 else None
            if what == "start":
                run["starts"] += 1
                run["start"] = ms if run["start"] is None else min(run["start"], ms)
            else:
                run["end"] = ms if run["end"] is None else max(run["end"], ms)
                run["how"] = rest[2] if len(rest) > 2 else "exit"
    out = []
    for run in runs.values():
        if run["start"] is None:  # an end without a start: keep it, as a point
            run["start"] = run["end"]
        run["open"] = run["end"] is None
        if run["open"]:
            if run["kind"] == "am":
                hb = read_heartbeat(f"{path}.hb.{run['container']}")
                run["end"] = max(run["start"], hb or run["start"]) + GRACE_MS
            else:
                run["end"] = run["start"] + task_ms + GRACE_MS
        out.append(run)
    out.sort(key=lambda r: (r["start"], r["container"]))
    return out


def overlaps(am_runs):
    """Pairs of AM runs of one app in different sub-clusters whose intervals intersect."""
    found = []
    for i, a in enumerate(am_runs):
        for b in am_runs[i + 1:]:
            if a["sc"] != b["sc"] and max(a["start"], b["start"]) < min(a["end"], b["end"]):
                found.append((a, b))
    return found


def interval(run):
    return {"sc": run["sc"], "nm": run["nm"], "container": run["container"],
            "start_ms": run["start"], "end_ms": run["end"], "open": run["open"],
            "how": run["how"], **({"attempt": run.get("attempt")} if run["kind"] == "am" else
                                  {"work_app": run.get("work_app")})}


def analyze(runs, slack_ms=2000):
    """What one app's runs say: AM runs per sub-cluster, its containers per sub-cluster (and in
    secondaries, i.e. not where the AM of the copy ran), overlapping copies, containers that
    ran while no AM of the app was alive, container ids that started twice in one sub-cluster
    and container ids used in two sub-clusters (ids that are not unique federation-wide)."""
    ams = [r for r in runs if r["kind"] == "am"]
    tasks = [r for r in runs if r["kind"] == "task"]
    per_sc = {}
    for r in runs:
        d = per_sc.setdefault(r["sc"], {"am_runs": 0, "containers": 0, "intervals": []})
        d["am_runs" if r["kind"] == "am" else "containers"] += 1
        d["intervals"].append([r["start"], r["end"]])
    for d in per_sc.values():  # merged running intervals per sub-cluster
        merged = []
        for s, e in sorted(d["intervals"]):
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        d["intervals"] = merged
    pairs = overlaps(ams)
    in_secondary = 0
    without_am = []
    for t in tasks:
        alive = [a for a in ams if a["start"] - slack_ms <= t["start"] <= a["end"] + slack_ms]
        if not alive:
            without_am.append(interval(t))
        elif all(a["sc"] != t["sc"] for a in alive):
            in_secondary += 1
    return {
        "am_runs": len(ams),
        "am_sub_clusters": sorted({a["sc"] for a in ams}),
        "attempts_seen": sorted({f"{a['sc']}:{a.get('attempt')}" for a in ams}),
        "per_sub_cluster": per_sc,
        "containers": len(tasks),
        "containers_in_secondaries": in_secondary,
        "overlapping_copies": [[interval(a), interval(b)] for a, b in pairs],
        "containers_without_live_am": without_am,
        "duplicate_container_ids": sorted(r["container"] for r in runs if r["starts"] > 1),
        "container_ids_in_two_sub_clusters": sorted(
            {r["container"] for r in runs
             if len({x["sc"] for x in runs if x["container"] == r["container"]}) > 1}),
        "ams_finished": sum(1 for a in ams if not a["open"] and a["how"] == "rc=0"),
        # Containers that ran to their end (not stopped): each did its work once.
        "containers_completed": sum(1 for t in tasks if not t["open"] and t["how"] == "exit"),
        # Per AM run (in start order): the completed containers that started while it was the
        # latest AM alive, so a copy that ran its whole ask is visible as such.
        "completed_per_am_run": _completed_per_am_run(ams, tasks, slack_ms),
        "am_run_sub_clusters": [a["sc"] for a in ams],
    }


def _completed_per_am_run(ams, tasks, slack_ms):
    counts = [0] * len(ams)
    for t in tasks:
        if t["open"] or t["how"] != "exit":
            continue
        alive = [i for i, a in enumerate(ams)
                 if a["start"] - slack_ms <= t["start"] <= a["end"] + slack_ms]
        if alive:
            counts[max(alive, key=lambda i: ams[i]["start"])] += 1
    return counts


def marker_files(runs_dir):
    """The marker files of a run (not the heartbeat files): name -> path."""
    return {os.path.basename(p): p for p in glob.glob(os.path.join(runs_dir, "a*"))
            if re.fullmatch(r"a\d+", os.path.basename(p))}


def live_ams(path, now_ms, fresh_ms=3000):
    """AM runs of one marker file that are alive now: a start line, no end line, and a
    heartbeat within fresh_ms. (nm, app id, container) each."""
    out = []
    for r in parse(path, 0):
        if r["kind"] != "am" or not r["open"]:
            continue
        hb = read_heartbeat(f"{path}.hb.{r['container']}")
        if hb is not None and now_ms - hb <= fresh_ms:
            out.append((r["nm"], r["app"], r["container"]))
    return out
