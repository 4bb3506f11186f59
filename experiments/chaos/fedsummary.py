"""The summary of experiments/chaos/federation: what the markers, the router's listing, the store
and the chaos log say, and whether every check passed."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fedmarkers  # noqa: E402
from weftproc import TERMINAL, field  # noqa: E402

EVIDENCE_APPS = 5  # apps per finding whose daemon log lines are quoted


def _rel(ms, start_ms):
    return None if ms is None else round((ms - start_ms) / 1000, 1)


def _succeeded(report):
    return (str(field(report, "state", default="")) == "APP_FINISHED" and
            str(field(report, "finalStatus", "final_status", default="")).endswith("SUCCEEDED"))


def _ran_to_its_end_twice(args, tracked, analysis, am_runs):
    """Whether two AM runs in different sub-clusters each completed the whole ask and the
    earlier of them ended by itself (rc=0), i.e. the app had finished before it ran again."""
    asked = _asked(args, tracked)
    full = [(run, sc) for run, sc, c in zip(am_runs, analysis["am_run_sub_clusters"],
                                            analysis["completed_per_am_run"]) if c >= asked]
    if len({sc for _, sc in full}) < 2:
        return False
    full.sort(key=lambda e: e[0][1] if len(e[0]) > 1 and e[0][1] is not None else 0)
    return any(len(run) > 3 and run[3] == "rc=0" for run, _ in full[:-1])


def _attempt_of_container(container_id):
    """The attempt number a container id names (container_e<epoch>_<ts>_<seq>_<attempt>_<n>),
    or None."""
    parts = (container_id or "").split("_")
    try:
        return int(parts[-2])
    except (IndexError, ValueError):
        return None


def new_attempt_after_nm_kill(killed):
    """Whether the AM an NM kill -9 hit did not carry the app to its end by itself: an AM run of
    the app started after the kill, the app ended with another attempt than that AM's, or it
    did not SUCCEED. AM runs before the kill (e.g. copies fenced in earlier LOST cycles) do not
    count. `killed`: one entry of am_nm_killed's detail (killed_s; am_run_starts_s, the start
    of each AM run of the app, s on the same scale; am_container; attempts; final_status)."""
    if not str(killed.get("final_status") or "").endswith("SUCCEEDED"):
        return True
    if any(s is not None and s > killed["killed_s"] for s in killed.get("am_run_starts_s", [])):
        return True
    return _attempt_of_container(killed.get("am_container")) != int(killed.get("attempts") or 0)


def _asked(args, info):
    """Containers the app asked for (its queue's count)."""
    return getattr(args, "span_containers" if info["queue"] == "span" else "containers", 0)


def _count_ids(reports, *names):
    counts = {}
    for r in reports or []:
        k = field(r, *names)
        counts[k] = counts.get(k, 0) + 1
    return counts


def summarize(args, fed, submitter, chaos, listed, rest_listed, homes, final_states, orphans,
              error, started):
    start_ms = int(started * 1000)
    tracked = dict(submitter.apps) if submitter is not None else {}
    failures = list(submitter.failures) if submitter is not None else []
    task_ms = int(args.task_s * 1000)
    analyses, details = {}, {}
    for app, info in tracked.items():
        runs = fedmarkers.parse(info["marker"], task_ms)
        a = fedmarkers.analyze(runs)
        a["marker_app_ids"] = sorted({r["app"] for r in runs if r["kind"] == "am"})
        analyses[app] = a
        rep = final_states.get(app, {})
        details[app] = {
            "n": info["n"], "queue": info["queue"], "router": info["router"],
            "submitted_s": _rel(info["submitted_ms"], start_ms),
            "state": field(rep, "state"), "final_status": field(rep, "finalStatus",
                                                                "final_status"),
            "attempts": field(rep, "currentAttempt", "current_attempt"),
            "report_sub_cluster": field(rep, "subClusterId", "sub_cluster_id"),
            "home_in_store": homes.get(app),
            "am_runs": [[r["sc"], _rel(r["start"], start_ms), _rel(r["end"], start_ms),
                         r["how"] or "open", r.get("attempt")]
                        for r in runs if r["kind"] == "am"],
            "running_per_sub_cluster": {sc: [[_rel(s, start_ms), _rel(e, start_ms)]
                                             for s, e in d["intervals"]]
                                        for sc, d in a["per_sub_cluster"].items()},
            "containers": a["containers"], "containers_in_secondaries":
                a["containers_in_secondaries"]}
        if a["marker_app_ids"] not in ([], [app]):
            details[app]["ran_under_app_ids"] = a["marker_app_ids"]
    # Marker files of submissions whose answer was lost (or failed) that ran all the same.
    tracked_markers = {os.path.basename(i["marker"]) for i in tracked.values()}
    untracked_ran = {}
    if fed is not None:
        for name, path in fedmarkers.marker_files(fed.runs).items():
            if name not in tracked_markers:
                runs = fedmarkers.parse(path, task_ms)
                if runs:
                    untracked_ran[name] = sorted({r["app"] for r in runs})
    states = [details[a]["state"] for a in tracked]
    overlapping = {a: x["overlapping_copies"] for a, x in analyses.items()
                   if x["overlapping_copies"]}
    evidence = {}
    for app in list(overlapping)[:EVIDENCE_APPS]:
        evidence[app] = {"intervals_ms": overlapping[app],
                         "logs": fed.logs_mentioning(app) if fed is not None else {}}
    # AMs whose NM was killed -9: did that AM itself finish, without a new attempt?
    nm_killed = []
    for rec in (chaos.kills["nm"] if chaos is not None else []):
        for am in rec.get("ams", []):
            app, cid = am["app"], am["am_container"]
            x = analyses.get(app)
            runs = fedmarkers.parse(tracked[app]["marker"], task_ms) if app in tracked else []
            own = next((r for r in runs if r["container"] == cid), None)
            # Confounded: its sub-cluster was stopped or its RM killed while the AM ran on.
            sc = rec["daemon"][3:].split("-")[0]
            until = own["end"] if own else rec["at_ms"]
            hits = [c["stopped_at_ms"] for c in (chaos.lost_cycles if chaos else [])
                    if c["sub_cluster"] == sc] + \
                   [k["at_ms"] for k in (chaos.kills["rm"] if chaos else [])
                    if k["daemon"] == f"rm-{sc}"]
            nm_killed.append({
                "app": app, "nm": rec["daemon"], "killed_s": _rel(rec["at_ms"], start_ms),
                "confounded": any(rec["at_ms"] <= t <= until for t in hits),
                "am_container": cid,
                "am_end": (own["how"] or "open") if own else None,
                "am_runs": x["am_runs"] if x else None,
                "am_run_starts_s": [run[1] for run in details.get(app, {}).get("am_runs", [])
                                    if len(run) > 1],
                "attempts": details.get(app, {}).get("attempts"),
                "state": details.get(app, {}).get("state"),
                "final_status": details.get(app, {}).get("final_status")})
    # Without a new attempt: no AM run of the app after the kill, and the app SUCCEEDED with
    # the attempt of that AM (an AM that unregistered may still be ended with SIGTERM before
    # it writes rc=0).
    new_attempt = [k for k in nm_killed if not k["confounded"] and new_attempt_after_nm_kill(k)]
    # Listing: each tracked app exactly once through the router (CLI and REST).
    cli_counts = _count_ids(listed, "applicationId", "application_id")
    rest_counts = _count_ids(rest_listed, "id", "applicationId")
    not_once_cli = {a: cli_counts.get(a, 0) for a in tracked if cli_counts.get(a, 0) != 1}
    not_once_rest = ({a: rest_counts.get(a, 0) for a in tracked if rest_counts.get(a, 0) != 1}
                     if rest_listed is not None else None)
    extra_listed = sorted(
        f"{field(r, 'applicationId', 'application_id')} {field(r, 'name')}"
        f"{' (unmanaged AM)' if field(r, 'unmanagedAm', 'unmanaged_am') else ''}"
        for r in listed or [] if field(r, "applicationId", "application_id") not in tracked)
    # ... and once by name: an unmanaged AM listed as an app of its own is the same app twice.
    names = _count_ids(listed, "name")
    names_not_once = {i["name"]: names.get(i["name"], 0) for i in tracked.values()
                      if names.get(i["name"], 0) != 1}
    attempts = {}
    for a in tracked:
        k = str(details[a]["attempts"])
        attempts[k] = attempts.get(k, 0) + 1
    homes_per_sc = {}
    for a in tracked:
        h = homes.get(a)
        homes_per_sc[str(h)] = homes_per_sc.get(str(h), 0) + 1
    lost = chaos.lost_cycles if chaos is not None else []
    kills = chaos.kills if chaos is not None else {}
    summary = {
        "command": " ".join(sys.argv),
        "elapsed_s": round(time.time() - started, 1),
        "store": getattr(args, "store", "sqlite"),
        "app_user": getattr(args, "app_user", None),
        "error": error,
        "apps": {"submitted": len(tracked), "submit_failures": len(failures),
                 "succeeded": sum(1 for a in tracked if _succeeded(final_states.get(a, {}))),
                 "failed": sum(1 for s in states if s == "APP_FAILED"),
                 "killed": sum(1 for s in states if s == "APP_KILLED"),
                 "unfinished": sum(1 for s in states if s not in TERMINAL),
                 "not_succeeded": sorted(
                     f"{a} {details[a]['state']} {details[a]['final_status']}"
                     for a in tracked if not _succeeded(final_states.get(a, {})))[:40]},
        "submit_failures": failures[:20],
        "untracked_submissions_that_ran": untracked_ran,
        "two_sub_clusters_at_once": {"apps": len(overlapping), "evidence": evidence,
                                     "all": sorted(overlapping)},
        # One submission (one marker file) whose AM ran under another id than the one the
        # client was given, or under two: a client-side retry or an id the federation changed.
        "submissions_run_under_other_ids": {
            a: x["marker_app_ids"] for a, x in analyses.items()
            if x["marker_app_ids"] not in ([], [a])},
        # AM runs (copies) in two sub-clusters that each completed every container the app
        # asked for, the earlier one's AM ending by itself (rc=0): the federation ran the app
        # to its end twice (e.g. an app that had SUCCEEDED was resubmitted after its
        # sub-cluster was lost). A new attempt in the same sub-cluster re-running the work is
        # YARN's at-least-once, not counted; nor is a copy whose AM was killed before it ended
        # (the NM fence of a lost sub-cluster) and that ran again at its new home: the app had
        # not ended, and resubmission reruns it (reported as reruns_after_a_kill).
        "work_done_twice": {
            a: {"asked": _asked(args, tracked[a]), "completed_per_am_run":
                x["completed_per_am_run"], "am_runs": details[a]["am_runs"]}
            for a, x in analyses.items() if _ran_to_its_end_twice(args, tracked[a], x,
                                                                  details[a]["am_runs"])},
        "reruns_after_a_kill": sorted(
            a for a, x in analyses.items()
            if len(set(x["am_run_sub_clusters"])) > 1
            and not _ran_to_its_end_twice(args, tracked[a], x, details[a]["am_runs"])),
        # One AM run that completed more containers than asked: containers allocated beyond the
        # ask (e.g. a split over sub-clusters allocated twice) and run by the AM. Reported only.
        "containers_beyond_ask": {
            a: {"asked": _asked(args, tracked[a]), "completed_per_am_run":
                x["completed_per_am_run"], "queue": tracked[a]["queue"]}
            for a, x in analyses.items()
            if any(c > _asked(args, tracked[a]) for c in x["completed_per_am_run"])},
        "moved_apps": sorted(a for a, x in analyses.items() if len(x["am_sub_clusters"]) > 1),
        "containers": {
            "run": sum(x["containers"] for x in analyses.values()),
            "in_secondaries": sum(x["containers_in_secondaries"] for x in analyses.values()),
            "apps_spanning": sum(1 for x in analyses.values() if x["containers_in_secondaries"]),
            "without_a_live_am": {a: x["containers_without_live_am"][:5]
                                  for a, x in analyses.items()
                                  if x["containers_without_live_am"]},
            "duplicate_ids": {a: x["duplicate_container_ids"] for a, x in analyses.items()
                              if x["duplicate_container_ids"]},
            "ids_in_two_sub_clusters": {a: x["container_ids_in_two_sub_clusters"]
                                        for a, x in analyses.items()
                                        if x["container_ids_in_two_sub_clusters"]}},
        "orphans": {"count": len(orphans),
                    "processes": [f"{pid} {cmd}" for pid, cmd in orphans[:20]]},
        "attempts": {"per_app_count": attempts,
                     "apps_with_more_than_one": sorted(
                         a for a in tracked if int(details[a]["attempts"] or 1) > 1)},
        "am_nm_killed": {"ams": len(nm_killed),
                         "confounded": sum(1 for k in nm_killed if k["confounded"]),
                         "with_new_attempt_or_not_finished_itself": len(new_attempt),
                         "detail": nm_killed},
        "listing": {"cli_listed": len(listed) if listed is not None else None,
                    "tracked_not_listed_once_cli": not_once_cli,
                    "names_not_listed_once_cli": names_not_once,
                    "rest_listed": len(rest_listed) if rest_listed is not None else None,
                    "tracked_not_listed_once_rest": not_once_rest,
                    "other_apps_listed": extra_listed[:40]},
        "homes": {"tracked_with_home": sum(1 for a in tracked if a in homes),
                  "in_store": len(homes), "per_sub_cluster": homes_per_sc},
        "lost_cycles": {"asked": args.lost_cycles, "done": len(lost),
                        "marked_lost": sum(1 for c in lost if c["marked_lost"]),
                        "running_again": sum(1 for c in lost if c["running_again"]),
                        "detail": lost},
        "kills": {k: len(v) for k, v in kills.items()},
        "kills_detail": kills,
        "unexpected_exits": chaos.unexpected_exits if chaos is not None else [],
        "flags_used": fed.flags_used if fed is not None else {},
        "commands": fed.command_lines() if fed is not None else {},
        "apps_detail": details,
    }
    checks = {
        "no_error": error is None,
        "apps_submitted": len(tracked) >= args.apps,
        "no_submit_failures": not failures,
        "every_app_succeeded": bool(tracked) and summary["apps"]["succeeded"] == len(tracked),
        "never_two_sub_clusters_at_once": not overlapping,
        "no_work_done_twice": not summary["work_done_twice"],
        "no_orphans": not orphans,
        # ... and at least one such AM was tested, unconfounded, when NMs were killed.
        "am_nm_killed_without_new_attempt": not new_attempt and (
            not args.kills or any(not k["confounded"] for k in nm_killed)),
        "each_app_listed_once": not not_once_cli and not names_not_once and
                                listed is not None,
        "lost_cycles_done": summary["lost_cycles"]["marked_lost"] >= args.lost_cycles,
        "kills_done": all(len(kills.get(k, [])) >= args.kills
                          for k in ("router", "rm", "gpg", "nm")),
        "no_unexpected_exits": not summary["unexpected_exits"],
        "no_duplicate_container_ids": not summary["containers"]["duplicate_ids"],
        # The run exercised unmanaged AMs: some app of queue span ran containers in a secondary.
        "some_apps_spanned": summary["containers"]["apps_spanning"] > 0 or not any(
            i["queue"] == "span" for i in tracked.values()),
        "each_submission_one_app_id": not summary["submissions_run_under_other_ids"] and
                                      not untracked_ran,
    }
    summary["checks"] = checks
    summary["pass"] = all(checks.values())
    # The per-app detail last: the headline numbers first when reading the file.
    summary["apps_detail"] = summary.pop("apps_detail")
    return summary
