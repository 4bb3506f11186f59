#!/usr/bin/env python3
"""Summarises experiments/placement/run's reports: summary.json and the table in the doc."""
import argparse
import json
import os

RUNS = [
    ("unconstrained", "unconstrained"),
    ("anti_affinity", "anti-affinity (hard)"),
    ("anti_affinity_soft", "anti-affinity (soft)"),
    ("gangs_reserve", "gangs, Weft (reserve)"),
    ("gangs_hold_and_wait", "gangs, hold-and-wait"),
]
BEGIN = "<!-- placement-table:begin (experiments/placement/run writes this) -->"
END = "<!-- placement-table:end -->"


def row(name, report, cmd):
    p = report["placement"]
    finished = sum(1 for j in report["jobs_detail"] if j["finish_s"] is not None)
    util = report["utilization"]
    held = p.get("held_idle", {})
    return {
        "run": name,
        "command": cmd,
        "jobs": report["jobs"],
        "jobs_finished": finished,
        "jobs_failed": report["jobs_failed"],
        "jobs_unfinished": p["jobs_unfinished"],
        "makespan_s": report["makespan_s"],
        "allocations": report["allocations"],
        "allocations_per_s": report["allocations_per_s"],
        "scheduler_wall_s": report["scheduler_wall_s"],
        "simulation_wall_s": report["total_wall_s"],
        "utilization_memory": util.get("memory-mb", 0.0),
        "utilization_vcores": util.get("vcores", 0.0),
        "held_idle_vcores": held.get("vcores", 0.0),
        "job_completion_p50_s": report["job_completion_s"]["p50"],
        "job_completion_p95_s": report["job_completion_s"]["p95"],
        "constrained_allocations": p["constrained_allocations"],
        "constraint_checked": p["constraint_checked"],
        "constraint_satisfaction": p["constraint_satisfaction"],
        "soft_violations": p["soft_violations"],
        "gang_phases": p["gang_phases"],
        "gangs_started": p["gangs_started"],
        "gang_reservations": p["gang_reservations"],
        "gang_wait_p50_s": p["gang_wait_s"]["p50"],
        "gang_wait_p95_s": p["gang_wait_s"]["p95"],
        "stalled": p["stalled"],
        "stalled_at_s": p["stalled_at_s"],
        "deadlock": p["deadlock"],
        "tasks_running_at_end": p["tasks_running_at_end"],
        "held_containers_at_end": p["held_containers_at_end"],
        "jobs_holding_at_end": p["jobs_holding_at_end"],
    }


def table(rows):
    head = ("| run | jobs finished | makespan s | allocations | alloc/s (core wall) | util mem | "
            "util vcores | held idle vcores | constrained containers | satisfied | gangs started "
            "| gang wait p50 / p95 s | JCT p50 / p95 s | deadlock |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for label, r in rows:
        sat = ("-" if r["constrained_allocations"] == 0
               else f"{100 * r['constraint_satisfaction']:.2f}%")
        gangs = "-" if r["gang_phases"] == 0 else f"{r['gangs_started']} of {r['gang_phases']}"
        wait = ("-" if r["gangs_started"] == 0
                else f"{r['gang_wait_p50_s']:.0f} / {r['gang_wait_p95_s']:.0f}")
        dead = "no"
        if r["deadlock"]:
            where = (f"total, at {r['stalled_at_s']:,.0f} s" if r["stalled"]
                     else f"at the time limit, {r['tasks_running_at_end']} tasks still running")
            dead = (f"**yes** ({where}): {r['jobs_unfinished']} jobs stuck, "
                    f"{r['held_containers_at_end']:,} containers of {r['jobs_holding_at_end']} "
                    "jobs held idle")
        elif r["jobs_unfinished"] > 0:
            dead = f"no, but {r['jobs_unfinished']} jobs unfinished"
        lines.append(
            f"| {label} | {r['jobs_finished']} of {r['jobs']} | {r['makespan_s']:.0f} | "
            f"{r['allocations']:,} | {r['allocations_per_s']:,.0f} | "
            f"{100 * r['utilization_memory']:.1f}% | {100 * r['utilization_vcores']:.1f}% | "
            f"{100 * r['held_idle_vcores']:.1f}% | {r['constrained_allocations']:,} | {sat} | "
            f"{gangs} | {wait} | {r['job_completion_p50_s']:.0f} / "
            f"{r['job_completion_p95_s']:.0f} | {dead} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--jobs", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--spread", required=True)
    ap.add_argument("--gangs", required=True)
    args = ap.parse_args()
    rows = []
    for name, label in RUNS:
        with open(os.path.join(args.runs, name + ".json")) as f:
            report = json.load(f)
        with open(os.path.join(args.runs, name + ".cmd")) as f:
            cmd = f.read().strip()
        cmd = "weft" + cmd[cmd.index(" sim "):]  # the binary's path is the run's
        rows.append((label, row(name, report, cmd)))
    summary = {
        "trace": "data/traces/alibaba2017_batch_task.csv",
        "jobs": args.jobs,
        "nodes": args.nodes,
        "anti_affinity_mix": args.spread,
        "gang_mix": args.gangs,
        "runs": [r for _, r in rows],
    }
    with open(args.summary, "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    text = table(rows)
    print(text)
    if os.path.exists(args.doc):
        with open(args.doc) as f:
            doc = f.read()
        if BEGIN in doc and END in doc:
            pre, rest = doc.split(BEGIN, 1)
            _, post = rest.split(END, 1)
            with open(args.doc, "w") as f:
                f.write(pre + BEGIN + "\n" + text + "\n" + END + post)
            return
    print(f"(no table markers in {args.doc}: not written)")


if __name__ == "__main__":
    main()
