#!/usr/bin/env python3
"""Summarises experiments/ras/run's outputs: summary.json, CSVs, plots and summary.md."""
import argparse
import csv
import json
import math
import os
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

JOBS = ["J1", "J2", "J3", "J4", "J5", "J6", "J7", "J8", "J9"]
APP = {"J1": "Sort", "J8": "Sort", "J9": "Sort", "J2": "Combine", "J6": "Combine",
       "J7": "Combine", "J3": "Select", "J4": "Select", "J5": "Select"}
# Seed 003, Table 1 and section 4.
SEED_ALONE = {"J1": 2500, "J8": 350, "J9": 250, "J2": 500, "J6": 750, "J7": 2500, "J3": 400,
              "J4": 280, "J5": 50}
SEED_EXP1 = {"J1": 3113, "J8": 3670, "J9": 4100, "J2": 648, "J6": 3406, "J7": 4536, "J3": 1252,
             "J4": 608, "J5": 623}
SEED_EXP2 = {"J1": 3018, "J8": 3365, "J9": 4141, "J2": 896, "J6": 2589, "J7": 4614, "J3": 802,
             "J4": 550, "J5": 560}
SEED_FAIR_BEST_MAKESPAN = 4781  # section 4.3: best Fair Scheduler configuration (4 slots)
SEED_RAS_EXP1_MAKESPAN = max(SEED_EXP1.values())
SEED_RAS_EXP2_MAKESPAN = max(SEED_EXP2.values())


def load(runs, name):
    with open(os.path.join(runs, name + ".json")) as f:
        return json.load(f)


def finish(report):
    return {j["id"]: j["finish_s"] for j in report["jobs_detail"]}


def goals(report):
    return {j["id"]: j["goal_s"] for j in report["jobs_detail"]}


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--penalty", type=float, required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--docs", required=True)
    a = ap.parse_args()
    os.makedirs(a.docs, exist_ok=True)

    alone = {j: load(a.runs, "alone_" + j)["makespan_s"] for j in JOBS}
    alone_ras = {j: load(a.runs, "alone_ras_" + j)["makespan_s"] for j in JOBS}
    e1 = {"ras": load(a.runs, "exp1_ras")}
    e1p0 = {"ras": load(a.runs, "exp1p0_ras")}
    e2 = {"ras": load(a.runs, "exp2_ras")}
    for s in range(1, 9):
        e1[s] = load(a.runs, f"exp1_fair{s}")
        e1p0[s] = load(a.runs, f"exp1p0_fair{s}")
        e2[s] = load(a.runs, f"exp2_fair{s}")
    fair_ms = {str(s): e1[s]["makespan_s"] for s in range(1, 9)}
    best = min(range(1, 9), key=lambda s: e1[s]["makespan_s"])
    fair_ms_p0 = {str(s): e1p0[s]["makespan_s"] for s in range(1, 9)}
    best_p0 = min(range(1, 9), key=lambda s: e1p0[s]["makespan_s"])
    FAIR2 = 4  # the seed's best static configuration is the experiment 2 baseline
    g = goals(e2["ras"])
    f_ras, f_fair = finish(e2["ras"]), finish(e2[FAIR2])
    f_best = finish(e2[best])
    jobs2 = []
    for j in JOBS:
        jobs2.append({
            "id": j, "app": APP[j], "goal_s": g[j],
            "ras_finish_s": f_ras[j], "fair_finish_s": f_fair[j],
            "ras_met": f_ras[j] is not None and f_ras[j] <= g[j],
            "fair_met": f_fair[j] is not None and f_fair[j] <= g[j],
            f"fair{best}_finish_s": f_best[j],
            "seed_ras_finish_s": SEED_EXP2[j],
        })
    summary = {
        "model": {
            "nodes": 20, "overload_penalty": a.penalty,
            "note": "weft sim, contention model with thrashing penalty; see docs/ras.md",
        },
        "isolation": [{"id": j, "seed_s": SEED_ALONE[j], "fair4_s": alone[j], "ras_s": alone_ras[j]}
                      for j in JOBS],
        "experiment1": {
            "ras_makespan_s": e1["ras"]["makespan_s"],
            "fair_makespan_s": fair_ms,
            "best_static_slots": best,
            "ras_vs_best_static": e1["ras"]["makespan_s"] / e1[best]["makespan_s"] - 1,
            "ras_finish_s": finish(e1["ras"]),
            "fair4_finish_s": finish(e1[4]),
            "seed": {"ras_makespan_s": SEED_RAS_EXP1_MAKESPAN, "best_static_slots": 4,
                     "fair_best_makespan_s": SEED_FAIR_BEST_MAKESPAN, "ras_finish_s": SEED_EXP1},
            "plain_model": {"overload_penalty": 0, "ras_makespan_s": e1p0["ras"]["makespan_s"],
                            "fair_makespan_s": fair_ms_p0, "best_static_slots": best_p0},
        },
        "experiment2": {
            "fair_slots": FAIR2,
            "jobs": jobs2,
            "ras_makespan_s": e2["ras"]["makespan_s"],
            "fair_makespan_s": e2[FAIR2]["makespan_s"],
            "ras_goals_met": sum(x["ras_met"] for x in jobs2),
            "fair_goals_met": sum(x["fair_met"] for x in jobs2),
            "seed": {"ras_makespan_s": SEED_RAS_EXP2_MAKESPAN,
                     "fair_best_makespan_s": SEED_FAIR_BEST_MAKESPAN},
        },
    }
    with open(a.summary, "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    # CSVs.
    with open(os.path.join(a.docs, "exp1_makespan.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scheduler", "makespan_s", "makespan_s_plain_model"])
        w.writerow(["ras", e1["ras"]["makespan_s"], e1p0["ras"]["makespan_s"]])
        for s in range(1, 9):
            w.writerow([f"fair-{s}-slots", e1[s]["makespan_s"], e1p0[s]["makespan_s"]])
    with open(os.path.join(a.docs, "exp2_jobs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "app", "goal_s", "ras_finish_s", "fair4_finish_s", "seed_ras_finish_s"])
        for x in jobs2:
            w.writerow([x["id"], x["app"], x["goal_s"], x["ras_finish_s"], x["fair_finish_s"],
                        x["seed_ras_finish_s"]])
    for name in ["exp1_ras", "exp1_fair4", "exp2_ras", "exp2_fair4"]:
        shutil.copy(os.path.join(a.runs, name + ".csv"), os.path.join(a.docs, name + "_timeseries.csv"))
        shutil.copy(os.path.join(a.runs, name + ".jobs.csv"), os.path.join(a.docs, name + "_jobs.csv"))

    # Fig. 3: makespan vs slots.
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = list(range(1, 9))
    ax.bar([str(s) for s in xs], [e1[s]["makespan_s"] for s in xs], color="#8da0cb",
           label="fair, fixed slots per node")
    ax.axhline(e1["ras"]["makespan_s"], color="#d95f02", lw=2, label="ras")
    ax.set_xlabel("map slots per node (fair baseline)")
    ax.set_ylabel("workload makespan (s)")
    ax.set_title("Experiment 1: makespan (seed 003 Fig. 3 analogue)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.docs, "fig3_makespan.png"), dpi=110)
    plt.close(fig)

    # Fig. 4: running tasks per application and CPU busy/wait, fair-4 vs ras.
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharex=True)
    for col, (name, title) in enumerate([("exp1_fair4", "fair, 4 slots"), ("exp1_ras", "ras")]):
        rows = read_csv(os.path.join(a.runs, name + ".jobs.csv"))
        series = {}
        for r in rows:
            t = float(r["time_s"])
            for kind in ("running_map", "running_reduce"):
                key = (APP[r["job"]], kind)
                series.setdefault(key, {})
                series[key][t] = series[key].get(t, 0) + int(r[kind])
        ax = axes[0][col]
        colors = {"Sort": "#1b9e77", "Combine": "#d95f02", "Select": "#7570b3"}
        # Every sample time on every line: an app with no job reporting runs 0 tasks (not a
        # straight line between its jobs' samples).
        times = sorted({float(r["time_s"]) for r in rows})
        for (app, kind), pts in sorted(series.items()):
            ax.plot(times, [pts.get(t, 0) for t in times], color=colors[app],
                    ls="-" if kind == "running_map" else ":",
                    label=f"{app} {'maps' if kind == 'running_map' else 'reduces'}")
        ax.set_title(f"Experiment 1, {title}: running tasks")
        ax.set_ylabel("tasks")
        ax.legend(fontsize=7)
        ts = read_csv(os.path.join(a.runs, name + ".csv"))
        t = [float(r["time_s"]) for r in ts]
        ax = axes[1][col]
        for key, label, c in [("cpu_busy", "CPU busy", "#1f78b4"), ("cpu_wait", "CPU I/O wait", "#e31a1c")]:
            m = [100 * float(r[key + "_mean"]) for r in ts]
            sd = [100 * float(r[key + "_std"]) for r in ts]
            ax.plot(t, m, color=c, label=label + " (mean)")
            ax.fill_between(t, [x - y for x, y in zip(m, sd)], [x + y for x, y in zip(m, sd)],
                            color=c, alpha=0.2)
        ax.set_ylim(0, 105)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("% of node CPU (mean ± sd over nodes)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.docs, "fig4_tasks_cpu.png"), dpi=110)
    plt.close(fig)

    # Fig. 6: experiment 2 with ras: running tasks and utility per job.
    rows = read_csv(os.path.join(a.runs, "exp2_ras.jobs.csv"))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for j in JOBS:
        pts = [(float(r["time_s"]), int(r["running_map"]) + int(r["running_reduce"]),
                float(r["utility"])) for r in rows if r["job"] == j]
        if not pts:
            continue
        line, = ax1.plot([p[0] for p in pts], [p[1] for p in pts], label=j)
        u = [max(p[2], -3.0) if not math.isinf(p[2]) else -3.0 for p in pts]
        ax2.plot([p[0] for p in pts], u, color=line.get_color(), label=j)
        gl = g[j]
        ax1.axvline(gl, color=line.get_color(), ls=":", lw=0.8)
    ax1.set_ylabel("running tasks")
    ax1.set_title("Experiment 2 with ras: tasks per job (dotted: goals) and job utility "
                  "(seed 003 Fig. 6 analogue)")
    ax1.legend(ncol=5, fontsize=7)
    ax2.set_ylabel("utility U (clipped at -3; -inf shown as -3)")
    ax2.set_xlabel("time (s)")
    ax2.axhline(0, color="grey", lw=0.5)
    fig.tight_layout()
    fig.savefig(os.path.join(a.docs, "fig6_utility.png"), dpi=110)
    plt.close(fig)

    # The summary table next to the seed's numbers.
    L = ["# RAS experiments: generated summary", "",
         f"Generated by `experiments/ras/run` (overload penalty {a.penalty}); see "
         "[../ras.md](../ras.md) for the model and assumptions.", "",
         "## Isolation (each job alone on the 20 nodes)", "",
         "| job | app | seed: length alone (s) | weft, fair 4 slots (s) | weft, ras (s) |",
         "|---|---|---|---|---|"]
    for j in JOBS:
        L.append(f"| {j} | {APP[j]} | {SEED_ALONE[j]:,} | {alone[j]:,.0f} | {alone_ras[j]:,.0f} |")
    L += ["", "## Experiment 1: makespan (relaxed goals)", "",
          "| scheduler | weft sim (s) | plain model, penalty 0 (s) |", "|---|---|---|",
          f"| ras | {e1['ras']['makespan_s']:,.0f} | {e1p0['ras']['makespan_s']:,.0f} |"]
    for s in range(1, 9):
        L.append(f"| fair, {s} slots | {e1[s]['makespan_s']:,.0f} | {e1p0[s]['makespan_s']:,.0f} |")
    L += ["", f"Best static configuration: {best} slots here (plain model: {best_p0}); seed: 4. "
          f"RAS vs the best static: {100 * summary['experiment1']['ras_vs_best_static']:+.1f}% "
          f"(seed: RAS {SEED_RAS_EXP1_MAKESPAN:,} s vs about {SEED_FAIR_BEST_MAKESPAN:,} s, -5%).",
          "", "| job | seed ras finish (s) | weft ras finish (s) | weft fair-4 finish (s) |",
          "|---|---|---|---|"]
    f1r, f14 = finish(e1["ras"]), finish(e1[4])
    for j in JOBS:
        L.append(f"| {j} | {SEED_EXP1[j]:,} | {f1r[j]:,.0f} | {f14[j]:,.0f} |")
    L += ["", "## Experiment 2: tight goals", "",
          f"| job | app | goal (s) | seed ras finish (s) | weft ras finish (s) | weft fair-{FAIR2} finish (s) |",
          "|---|---|---|---|---|---|"]
    for x in jobs2:
        def fmt(v, met):
            return f"{v:,.0f} {'met' if met else '**missed**'}"
        L.append(f"| {x['id']} | {x['app']} | {x['goal_s']:,.0f} | {x['seed_ras_finish_s']:,} | "
                 f"{fmt(x['ras_finish_s'], x['ras_met'])} | {fmt(x['fair_finish_s'], x['fair_met'])} |")
    L += ["", f"Goals met: ras {summary['experiment2']['ras_goals_met']} of 9, "
          f"fair-{FAIR2} {summary['experiment2']['fair_goals_met']} of 9. Makespan: ras "
          f"{e2['ras']['makespan_s']:,.0f} s, fair-{FAIR2} {e2[FAIR2]['makespan_s']:,.0f} s "
          f"(seed: {SEED_RAS_EXP2_MAKESPAN:,} s vs {SEED_FAIR_BEST_MAKESPAN:,} s).", "",
          "Plots: [fig3_makespan.png](fig3_makespan.png), [fig4_tasks_cpu.png](fig4_tasks_cpu.png), "
          "[fig6_utility.png](fig6_utility.png).", ""]
    with open(os.path.join(a.docs, "summary.md"), "w") as f:
        f.write("\n".join(L))
    print(f"summary: {a.summary}; tables and plots: {a.docs}")


if __name__ == "__main__":
    main()
