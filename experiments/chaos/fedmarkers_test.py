#!/usr/bin/python3
"""Tests of fedmarkers (python3 experiments/chaos/fedmarkers_test.py)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fedmarkers  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
