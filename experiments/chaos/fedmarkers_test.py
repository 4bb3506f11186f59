#!/usr/bin/python3
"""Tests of fedmarkers (python3 experiments/chaos/fedmarkers_test.py)."""
import os
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fedmarkers  # noqa: E402
import fedsummary  # noqa: E402


class MarkersTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fedmarkers-test-")
        self.path = os.path.join(self.dir, "a1")

    def write(self, *lines, hb=None):
        with open(self.path, "w") as fh:
            fh.write("".join(l + "\n" for l in lines))
        for cid, ms in (hb or {}).items():
            with open(f"{self.path}.hb.{cid}", "w") as fh:
                fh.write(f"{ms}\n")

    def test_one_copy_spanning_into_a_secondary_is_no_overlap(self):
        self.write("app_1 sc1 am:c_am start 1000 sc1-0 att_1",
                   "app_1 sc1 c_1 start 2000 sc1-1 app_1",
                   "app_1 sc2 c_2 start 2100 sc2-0 app_9",
                   "app_1 sc1 c_1 end 5000 sc1-1 app_1",
                   "app_1 sc2 c_2 end 5100 sc2-0 app_9",
                   "app_1 sc1 am:c_am end 6000 sc1-0 att_1 rc=0")
        a = fedmarkers.analyze(fedmarkers.parse(self.path, 3000))
        self.assertEqual(a["overlapping_copies"], [])
        self.assertEqual(a["am_runs"], 1)
        self.assertEqual(a["containers_in_secondaries"], 1)
        self.assertEqual(a["ams_finished"], 1)
        self.assertEqual(a["containers_completed"], 2)
        self.assertEqual(a["completed_per_am_run"], [2])
        self.assertEqual(fedmarkers.marker_files(self.dir), {"a1": self.path})
        self.assertEqual(a["containers_without_live_am"], [])

    def test_two_copies_at_once_in_two_sub_clusters_overlap(self):
        # The first copy's AM was killed with SIGKILL: it ends a second after its heartbeat.
        self.write("app_1 sc1 am:c_a start 1000 sc1-0 att_1",
                   "app_1 sc2 am:c_b start 8000 sc2-0 att_1",
                   "app_1 sc2 am:c_b end 12000 sc2-0 att_1 rc=0", hb={"c_a": 9000})
        a = fedmarkers.analyze(fedmarkers.parse(self.path, 3000))
        self.assertEqual(len(a["overlapping_copies"]), 1)
        first, second = a["overlapping_copies"][0]
        self.assertEqual((first["sc"], first["end_ms"], first["open"]), ("sc1", 10000, True))
        self.assertEqual(second["sc"], "sc2")

    def test_copies_one_after_the_other_do_not_overlap(self):
        self.write("app_1 sc1 am:c_a start 1000 sc1-0 att_1",
                   "app_1 sc1 am:c_a end 3000 sc1-0 att_1 term",
                   "app_1 sc2 am:c_b start 3500 sc2-0 att_1",
                   "app_1 sc2 am:c_b end 9000 sc2-0 att_1 rc=0")
        a = fedmarkers.analyze(fedmarkers.parse(self.path, 3000))
        self.assertEqual(a["overlapping_copies"], [])
        self.assertEqual(a["am_sub_clusters"], ["sc1", "sc2"])

    def test_a_container_id_that_starts_twice_and_one_without_an_am(self):
        self.write("app_1 sc1 am:c_a start 1000 sc1-0 att_1",
                   "app_1 sc1 am:c_a end 2000 sc1-0 att_1 rc=0",
                   "app_1 sc1 c_1 start 10000 sc1-1 app_1",
                   "app_1 sc1 c_1 start 11000 sc1-1 app_1")
        a = fedmarkers.analyze(fedmarkers.parse(self.path, 3000))
        self.assertEqual(a["duplicate_container_ids"], ["c_1"])
        self.assertEqual(len(a["containers_without_live_am"]), 1)
        self.assertTrue(a["containers_without_live_am"][0]["open"])

    def test_one_id_in_two_sub_clusters_is_two_runs(self):
        self.write("app_1 sc3 am:c_a start 1000 sc3-0 att_1",
                   "app_1 sc3 c_13 start 2000 sc3-1 app_1",
                   "app_1 sc3 c_13 end 5000 sc3-1 app_1",
                   "app_1 sc1 am:c_13 start 9000 sc1-0 att_1",
                   "app_1 sc1 am:c_13 end 12000 sc1-0 att_1 rc=0")
        runs = fedmarkers.parse(self.path, 3000)
        self.assertEqual(len(runs), 3)
        a = fedmarkers.analyze(runs)
        self.assertEqual(a["am_sub_clusters"], ["sc1", "sc3"])
        self.assertEqual(a["duplicate_container_ids"], [])
        self.assertEqual(a["container_ids_in_two_sub_clusters"], ["c_13"])

    def test_live_ams_need_a_fresh_heartbeat(self):
        self.write("app_1 sc1 am:c_a start 1000 sc1-0 att_1",
                   "app_2 sc2 am:c_b start 1000 sc2-1 att_1", hb={"c_a": 5000, "c_b": 1000})
        self.assertEqual(fedmarkers.live_ams(self.path, 6000), [("sc1-0", "app_1", "c_a")])


class NmKillTest(unittest.TestCase):
    """fedsummary.new_attempt_after_nm_kill: did the AM an NM kill -9 hit finish the app?"""

    KILLED = {"killed_s": 143.9, "am_container": "container_e3_17_0017_02_000072",
              "attempts": 2, "final_status": "FINAL_SUCCEEDED", "am_run_starts_s": [106.8, 126.5]}

    def test_runs_before_the_kill_do_not_count(self):
        # Attempt 1 was fenced in a LOST cycle; attempt 2's AM survived the kill and finished.
        self.assertFalse(fedsummary.new_attempt_after_nm_kill(self.KILLED))

    def test_an_am_run_started_after_the_kill_is_a_new_attempt(self):
        k = dict(self.KILLED, am_run_starts_s=[126.5, 150.2])
        self.assertTrue(fedsummary.new_attempt_after_nm_kill(k))

    def test_an_app_that_ended_with_another_attempt_or_not_succeeded(self):
        self.assertTrue(fedsummary.new_attempt_after_nm_kill(dict(self.KILLED, attempts=3)))
        self.assertTrue(fedsummary.new_attempt_after_nm_kill(
            dict(self.KILLED, final_status="FINAL_FAILED")))


class SummaryTest(unittest.TestCase):
    """fedsummary.summarize over a fake run: one tracked app and one failed submission."""

    def run_summary(self, second_marker, listed_names, extra="", first_end="rc=0"):
        runs = tempfile.mkdtemp(prefix="fedsummary-test-")
        with open(os.path.join(runs, "a0"), "w") as fh:
            fh.write("app_1 sc1 am:c_a start 1000 sc1-0 att_1\n"
                     f"app_1 sc1 am:c_a end 3000 sc1-0 att_1 {first_end}\n" + extra)
        if second_marker:
            with open(os.path.join(runs, "a1"), "w") as fh:
                fh.write(second_marker)
        sub = types.SimpleNamespace(
            apps={"app_1": {"n": 0, "name": "chaosfed-0", "router": "router1", "queue": "default",
                            "submitted_ms": 500, "marker": os.path.join(runs, "a0")}},
            failures=[])
        fed = types.SimpleNamespace(runs=runs, flags_used={}, command_lines=lambda: {},
                                    logs_mentioning=lambda app: {})
        args = types.SimpleNamespace(task_s=1, apps=1, lost_cycles=0, kills=0, containers=1,
                                     span_containers=3)
        done = {"applicationId": "app_1", "name": "chaosfed-0", "state": "APP_FINISHED",
                "finalStatus": "FINAL_SUCCEEDED", "currentAttempt": 1}
        listed = [dict(done, name=n, applicationId=f"app_{k + 1}")
                  for k, n in enumerate(listed_names)]
        return fedsummary.summarize(args, fed, sub, None, listed, None, {"app_1": "sc1"},
                                    {"app_1": done}, [], None, 0.4)

    def test_a_clean_run_passes(self):
        s = self.run_summary(None, ["chaosfed-0"])
        self.assertTrue(s["pass"], s["checks"])

    def test_a_failed_submission_that_ran_fails_the_run(self):
        s = self.run_summary("app_9 sc1 am:c_b start 1000 sc1-0 att_1\n", ["chaosfed-0"])
        self.assertFalse(s["checks"]["each_submission_one_app_id"])
        self.assertEqual(s["untracked_submissions_that_ran"], {"a1": ["app_9"]})

    def test_an_app_whose_containers_completed_twice_did_its_work_twice(self):
        s = self.run_summary(None, ["chaosfed-0"], extra=(
            "app_1 sc1 c_1 start 1500 sc1-0 app_1\napp_1 sc1 c_1 end 2500 sc1-0 app_1\n"
            "app_1 sc2 am:c_b start 4000 sc2-0 att_1\n"
            "app_1 sc2 c_2 start 4500 sc2-0 app_1\napp_1 sc2 c_2 end 5500 sc2-0 app_1\n"))
        self.assertFalse(s["checks"]["no_work_done_twice"])
        self.assertEqual(s["work_done_twice"]["app_1"]["completed_per_am_run"], [1, 1])

    def test_a_copy_killed_before_its_end_and_run_again_at_its_new_home_is_a_rerun(self):
        # The NM fence killed sc1's AM (term) after its container had completed; the GPG
        # resubmitted the app, which ran to its end in sc2: one app outcome, work rerun.
        s = self.run_summary(None, ["chaosfed-0"], first_end="term", extra=(
            "app_1 sc1 c_1 start 1500 sc1-0 app_1\napp_1 sc1 c_1 end 2500 sc1-0 app_1\n"
            "app_1 sc2 am:c_b start 4000 sc2-0 att_1\n"
            "app_1 sc2 c_2 start 4500 sc2-0 app_1\napp_1 sc2 c_2 end 5500 sc2-0 app_1\n"
            "app_1 sc2 am:c_b end 6000 sc2-0 att_1 rc=0\n"))
        self.assertTrue(s["checks"]["no_work_done_twice"], s["work_done_twice"])
        self.assertEqual(s["reruns_after_a_kill"], ["app_1"])

    def test_an_unmanaged_am_listed_as_an_app_fails_the_listing(self):
        s = self.run_summary(None, ["chaosfed-0", "chaosfed-0"])
        self.assertFalse(s["checks"]["each_app_listed_once"])
        self.assertEqual(s["listing"]["names_not_listed_once_cli"], {"chaosfed-0": 2})


if __name__ == "__main__":
    unittest.main()
