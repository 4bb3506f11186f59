"""The comparison table (text) and its plot (PNG) from the harness's results dict."""


def _fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def table(results):
    """One row per workload: each system's seconds and tasks/s, then Weft's throughput over
    each Slurm configuration's (>1: Weft faster)."""
    systems = results["systems"]
    others = [s for s in systems if s != "weft"] if "weft" in systems else []
    cols = []  # (header, width, cell(workload))
    for s in systems:
        def secs(w, s=s):
            r = w["results"].get(s, {})
            return _fmt(r.get("seconds"), ".2f") + ("!" if r.get("errors") else "")

        def rate(w, s=s):
            return _fmt(w["results"].get(s, {}).get("tasks_per_s"), ".1f")

        cols.append((f"{s} s", secs))
        cols.append((f"{s} tasks/s", rate))
    for s in others:
        def ratio(w, s=s):
            r = w["ratios"].get(s, {}).get("throughput_weft_over")
            return "-" if r is None else f"{r:.2f}x"

        cols.append((f"weft/{s}", ratio))
    name_w = max([len("workload")] + [len(w["name"]) for w in results["workloads"]]) + 2
    head = f"{'workload':<{name_w}}{'tasks':>6}" + "".join(f"{h:>{len(h) + 2}}" for h, _ in cols)
    lines = [head, "-" * len(head)]
    for w in results["workloads"]:
        lines.append(f"{w['name']:<{name_w}}{w['tasks']:>6}" +
                     "".join(f"{f(w):>{len(h) + 2}}" for h, f in cols))
    lines.append("s: from the first submission until the client saw the last task end "
                 "(both polled every 0.25 s)")
    lines.append("weft/X: Weft's tasks/s over X's (> 1: Weft faster); !: errors (see the JSON)")
    return "\n".join(lines)


def _plot_with_system_python(results, path, why):
    """This interpreter has no matplotlib (e.g. a pyenv python3 first in PATH): the plot is drawn
    by Debian's /usr/bin/python3, where scripts/install-deps.sh installs python3-matplotlib."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    system = "/usr/bin/python3"
    if os.path.realpath(sys.executable) == os.path.realpath(system) or not os.path.exists(system):
        return f"no plot: {why}"
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(results, f)
        data = f.name
    try:
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import report; "
                "r = report.plot(json.load(open(sys.argv[2])), sys.argv[3]); "
                "sys.exit(1 if r else 0)")
        done = subprocess.run([system, "-c", code, here, data, path], capture_output=True,
                              text=True, timeout=120)
        return None if done.returncode == 0 else f"no plot: {why} (and {system} failed too)"
    finally:
        os.unlink(data)


def plot(results, path):
    """Grouped bars of tasks/s per workload and system; returns None or why it was skipped."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return _plot_with_system_python(results, path, e)
    systems = results["systems"]
    workloads = results["workloads"]
    width = 0.8 / max(1, len(systems))
    fig, ax = plt.subplots(figsize=(2.2 + 2.0 * len(workloads), 4.5))
    for i, s in enumerate(systems):
        xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(workloads))]
        ys = [w["results"].get(s, {}).get("tasks_per_s") or 0 for w in workloads]
        ax.bar(xs, ys, width, label=s)
        for x, y, w in zip(xs, ys, workloads):
            r = w["results"].get(s, {})
            label = "failed" if r.get("errors") else (
                f"{r['seconds']:.1f}s" if r.get("seconds") is not None else None)
            if label:
                ax.annotate(label, (x, y), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels([w["name"] for w in workloads], fontsize=8)
    ax.set_ylabel("tasks/s (higher is better)")
    m = results["machine"]
    ax.set_title(f"Weft vs Slurm, one node of {results['node']['cpus']} CPUs / "
                 f"{results['node']['memory_mb']} MB (scale {results['scale']}, "
                 f"{m.get('cpus')} real cores)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
