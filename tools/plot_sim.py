#!/usr/bin/env python3
"""Plots a `weft sim` time series: utilisation per resource and containers per queue.

Usage: plot_sim.py --timeseries ts.csv [--report report.json] --out DIR
Writes DIR/utilization.png and DIR/containers.png (and .svg of both).
"""
import argparse
import csv
import json
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_sim.py: python3-matplotlib is not installed (run scripts/install-deps.sh)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeseries", required=True)
    ap.add_argument("--report", default="")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    with open(args.timeseries, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        sys.exit(f"plot_sim.py: {args.timeseries} has no samples")
    header, data = rows[0], rows[1:]
    cols = {name: [float(r[i]) for r in data] for i, name in enumerate(header)}
    t_h = [t / 3600.0 for t in cols["time_s"]]
    title = "weft sim"
    if args.report and os.path.exists(args.report):
        with open(args.report) as f:
            rep = json.load(f)
        title = (f"weft sim: {rep['policy']} on {rep['nodes']} nodes, {rep['jobs']} jobs, "
                 f"makespan {rep['makespan_s']:.0f} s")
    os.makedirs(args.out, exist_ok=True)

    fig, ax = plt.subplots(figsize=(10, 4))
    for name in header:
        if name.startswith("util_"):
            ax.plot(t_h, [100 * v for v in cols[name]], label=name[5:], linewidth=1)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("allocated (% of cluster)")
    ax.set_ylim(0, 105)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(args.out, f"utilization.{ext}"), dpi=110)
    plt.close(fig)

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for name in header:
        if name.startswith("running_"):
            ax1.plot(t_h, cols[name], label=name[8:], linewidth=1)
        if name.startswith("pending_"):
            ax2.plot(t_h, cols[name], label=name[8:], linewidth=1)
    ax1.set_ylabel("running containers")
    ax2.set_ylabel("pending containers")
    ax2.set_xlabel("time (h)")
    ax1.set_title(title, fontsize=10)
    for ax in (ax1, ax2):
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(args.out, f"containers.{ext}"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
