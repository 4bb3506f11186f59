"""A private one-node Slurm cluster on loopback, and the workloads' Slurm side.

Everything belongs to the harness: its own munged (own key, socket, pid, log and seed files;
the system's munged at /run/munge, which Weft uses, is left alone), its own slurm.conf in the
work dir, slurmctld and slurmd in the foreground (-D) on free loopback ports, state and spool in
the work dir. Clients find it through SLURM_CONF. The node is declared with the same size as
Weft's (CPUs, RealMemory); SlurmdParameters=config_overrides makes slurmd take the declared size
instead of draining a node whose hardware is smaller (Weft's node, too, declares 16 vcores on
this machine's cores). No cgroups: proctrack/linuxproc and task/none, so slurmd 22.05 needs no
cgroup.conf.

CONFIGS holds the settings of each configuration on top of the base settings in conf_text(),
which are only what is needed to run at all. "default" adds nothing. "tuned" applies Slurm's
High Throughput Computing Administration Guide (https://slurm.schedmd.com/high_throughput.html,
doc/html/high_throughput.shtml in Slurm's sources) where it applies to one node and one user;
"guide" is "tuned" plus the guide's example SchedulerParameters set verbatim
(batch_sched_delay=20, sched_min_interval=2 s, ...), which the guide itself says "will not work
well in every case". TUNED_NOTES (also written to results.json) says what is applied and why.
"""
import concurrent.futures
import os
import re
import shutil
import socket
import time

from common import free_port, log, pids_named, run, start, stop, tail, wait_until

POLL_S = 0.25  # as Weft's `--wait` polls its RM
ACTIVE_STATES = "PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED"

# The guide's recommendations and what this harness does with each ("quoted" = the guide):
TUNED_NOTES = {
    "AccountingStorageType": "not set (accounting_storage/none): \"Turning accounting off "
                             "provides minimal improvement\"",
    "JobAcctGatherType=jobacct_gather/none": "\"Disabling the collection of job accounting "
                                             "information will improve job throughput\"",
    "JobCompType=jobcomp/none": "\"Disabling recording of job completion information will "
                                "improve job throughput\"",
    "MaxJobCount=100000": "default 10,000 records; raised so bursts never hit it",
    "MessageTimeout=30": "default 10 s; \"This value might need to be increased somewhat\"",
    "MinJobAge=2": "default 300 s; \"should be reduced to a few seconds if possible\" (2 is "
                   "the man page's smallest recommended non-zero value)",
    "PriorityType=priority/basic": "\"considerably faster than other options\" (FIFO)",
    "SchedulerType=sched/builtin": "\"If most jobs are short lived then use of the "
                                   "sched/builtin plugin is recommended\" (no backfill, so the "
                                   "bf_* parameters do not apply)",
    "SchedulerParameters": "left at Slurm's defaults in 'tuned'. The guide's example set "
                           "is for 'hundreds of jobs per second' on a large cluster and 'will "
                           "not work well in every case'. Measured here (one node, 50 x true, "
                           "22.05.8, machine busy): the defaults 8.1-8.4 s; the set verbatim "
                           "8.9 s; batch_sched_delay=20 with partition_job_depth=500, "
                           "sched_max_job_start=200, default_queue_depth=1000 (no "
                           "sched_min_interval) 21-41 s; the same without batch_sched_delay "
                           "8.1 s. The 'guide' config runs the set verbatim "
                           "(--slurm-configs default,tuned,guide)",
    "SlurmctldDebug=error, SlurmdDebug=error": "\"More detailed logging will decrease system "
                                              "throughput\"",
    "SlurmdLogFile on local storage": "the work dir (as in every config)",
    "munged --num-threads 10": "\"We suggest starting the Munge daemon with ten threads\"",
    "not applied": "sysctls (file-max, somaxconn, tcp_*: machine-wide, and this load stays far "
                   "below their limits), several SlurmctldPorts (for bursts beyond SOMAXCONN), "
                   "PrologSlurmctld/EpilogSlurmctld and lua job_submit (none configured anyway)",
}

TUNED = {
    "JobAcctGatherType": "jobacct_gather/none",
    "JobCompType": "jobcomp/none",
    "MaxJobCount": "100000",
    "MessageTimeout": "30",
    "MinJobAge": "2",
    "PriorityType": "priority/basic",
    "SchedulerType": "sched/builtin",
    "SlurmctldDebug": "error",
    "SlurmdDebug": "error",
}
GUIDE = dict(TUNED, SchedulerParameters=(
    "batch_sched_delay=20,bf_continue,bf_interval=300,bf_min_age_reserve=10800,"
    "bf_resolution=600,bf_yield_interval=1000000,partition_job_depth=500,"
    "sched_max_job_start=200,sched_min_interval=2000000"))

# name: (settings over the base ones, munged threads)
CONFIGS = {"default": ({}, 2), "tuned": (TUNED, 10), "guide": (GUIDE, 10)}


def installed():
    return all(shutil.which(b) for b in ("slurmctld", "slurmd", "sbatch", "squeue", "munged"))


def install():
    """apt-get install slurm-wlm munge (Debian), without starting the packages' services."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log("installing slurm-wlm and munge with apt-get")
    for args in (["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "--no-install-recommends", "slurm-wlm",
                  "munge"]):
        r = run(args, env=env, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    if not installed():
        raise RuntimeError("slurm-wlm installed but slurmctld/slurmd/sbatch are not on PATH")


def version():
    r = run(["slurmctld", "-V"], timeout=20)
    return (r.stdout or r.stderr).strip()


class SlurmCluster:
    def __init__(self, work, config, cpus, memory_mb, max_array):
        self.name = config
        self.settings, self.munge_threads = CONFIGS[config]
        self.dir = os.path.join(work, f"slurm-{config}")
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o711)  # munged wants execute for all on its socket's path
        self.cpus, self.memory_mb, self.max_array = cpus, memory_mb, max_array
        self.node = socket.gethostname().split(".")[0]
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.munge_socket = os.path.join(self.dir, "munge", "munge.socket")
        self.munged = self.ctld = self.slurmd = None
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for k in [k for k in self.env if k.startswith(("SLURM_", "SBATCH_", "SQUEUE_"))]:
            if k != "SLURM_CONF":
                del self.env[k]
        self.stepds_before = set()

    def conf_text(self):
        d = self.dir
        base = {
            "ClusterName": "weftbench",
            "SlurmctldHost": "localhost(127.0.0.1)",
            "SlurmctldPort": str(free_port()),
            "SlurmdPort": str(free_port()),
            "SlurmUser": "root",
            "SlurmdUser": "root",
            "AuthType": "auth/munge",
            "CredType": "cred/munge",
            "AuthInfo": f"socket={self.munge_socket}",
            "StateSaveLocation": f"{d}/state",
            "SlurmdSpoolDir": f"{d}/spool",
            "SlurmctldPidFile": f"{d}/slurmctld.pid",
            "SlurmdPidFile": f"{d}/slurmd.pid",
            "SlurmctldLogFile": f"{d}/slurmctld.log",
            "SlurmdLogFile": f"{d}/slurmd.log",
            "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none",
            "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_Core",
            "SlurmdParameters": "config_overrides",
            "ReturnToService": "2",
            "MailProg": "/bin/true",
            "MaxArraySize": str(max(1001, self.max_array + 1)),
        }
        base.update(self.settings)
        lines = ["# Written by bench/compare/slurm (config: %s)." % self.name]
        lines += [f"{k}={v}" for k, v in base.items()]
        lines.append(f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} "
                     f"RealMemory={self.memory_mb} State=UNKNOWN")
        lines.append(f"PartitionName=bench Nodes={self.node} Default=YES MaxTime=INFINITE "
                     "State=UP")
        return "\n".join(lines) + "\n"

    def start(self, limit_s=60):
        d = self.dir
        for sub in ("state", "spool", "munge"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
            os.chmod(os.path.join(d, sub), 0o711 if sub == "munge" else 0o700)
        # munged: a key of its own (1 KiB of random bytes, mode 0600), everything in the work dir.
        key = os.path.join(d, "munge", "munge.key")
        with open(key, "wb") as fh:
            fh.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self.munged = start(["munged", "--foreground", f"--socket={self.munge_socket}",
                             f"--key-file={key}", f"--pid-file={d}/munge/munged.pid",
                             f"--log-file={d}/munge/munged.log",
                             f"--seed-file={d}/munge/munged.seed",
                             f"--num-threads={self.munge_threads}"],
                            os.path.join(d, "munged.out"))
        if not wait_until(lambda: os.path.exists(self.munge_socket) or
                          self.munged.poll() is not None, 20) or self.munged.poll() is not None:
            raise RuntimeError(f"munged did not start:\n{tail(os.path.join(d, 'munged.out'))}"
                               f"{tail(os.path.join(d, 'munge', 'munged.log'))}")
        with open(self.conf, "w") as fh:
            fh.write(self.conf_text())
        self.stepds_before = pids_named("slurmstepd")
        self.ctld = start(["slurmctld", "-D", "-i", "-f", self.conf],
                          os.path.join(d, "slurmctld.out"), env=self.env)
        self.slurmd = start(["slurmd", "-D", "-N", self.node, "-f", self.conf],
                            os.path.join(d, "slurmd.out"), env=self.env)

        def idle():
            for p, name in ((self.ctld, "slurmctld"), (self.slurmd, "slurmd")):
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}):\n"
                                       f"{tail(os.path.join(d, name + '.out'))}"
                                       f"{tail(os.path.join(d, name + '.log'))}")
            r = run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, timeout=10)
            return r.returncode == 0 and r.stdout.strip() == "idle"

        if not wait_until(idle, limit_s, 0.3):
            r = run(["sinfo", "-N", "-l"], env=self.env, timeout=10)
            raise RuntimeError(f"Slurm node not idle after {limit_s} s: {r.stdout}{r.stderr}\n"
                               f"{tail(os.path.join(d, 'slurmctld.log'))}"
                               f"{tail(os.path.join(d, 'slurmd.log'))}")
        log(f"slurm ({self.name}) up: node {self.node} idle, conf {self.conf}")

    def stop(self):
        """Cancels every job, waits (bounded) for them to end, stops the daemons and kills any
        slurmstepd that appeared since start() and is still there."""
        if self.ctld is not None and self.ctld.poll() is None:
            self.drain(limit_s=20)
        for p in (self.slurmd, self.ctld):
            stop(p, limit_s=20)
        for pid in pids_named("slurmstepd") - self.stepds_before:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        stop(self.munged, limit_s=10)
        self.munged = self.ctld = self.slurmd = None

    def drain(self, limit_s=30):
        """After a failed workload: cancels every job and waits (bounded) until none is left."""
        run(["scancel", "--full", "--user", "root"], env=self.env, timeout=20)
        wait_until(lambda: self.active_jobs() == 0, limit_s, 0.3)

    def active_jobs(self):
        """Jobs (array tasks folded) not yet ended; -1 when squeue fails."""
        r = run(["squeue", "-h", "-t", ACTIVE_STATES, "-o", "%i"], env=self.env, timeout=30)
        return len(r.stdout.split()) if r.returncode == 0 else -1

    def sbatch_cmd(self, command, array=None):
        cmd = ["sbatch", "--parsable", "--output=/dev/null", "--ntasks=1", "--cpus-per-task=1",
               f"--chdir={self.dir}"]
        if array:
            cmd.append(f"--array=0-{array - 1}")
        return cmd + ["--wrap", command]

    def _wait_done(self, t0, job_ids, n_tasks, timeout_s):
        """Polls squeue every POLL_S until no job is active; returns (elapsed, errors). Then
        checks the kept records (none with MinJobAge=2) for tasks that did not complete."""
        errors = []
        deadline = t0 + timeout_s
        while True:
            n = self.active_jobs()
            if n == 0:
                break
            if time.time() >= deadline:
                errors.append(f"{n} jobs still active after {timeout_s} s")
                break
            time.sleep(POLL_S)
        elapsed = time.time() - t0
        r = run(["squeue", "-h", "-t", "all", "-o", "%i %T"], env=self.env, timeout=30)
        states = {}
        for line in r.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and re.split(r"[_+]", parts[0])[0] in job_ids:
                states[parts[1]] = states.get(parts[1], 0) + 1
        bad = {s: c for s, c in states.items() if s != "COMPLETED"}
        if bad:
            errors.append(f"tasks not COMPLETED: {bad}")
        return elapsed, errors, states.get("COMPLETED", 0)

    def tasks(self, groups, timeout_s):
        """groups: [(n, command)], one job array each, all submitted at once; waits until all
        tasks ended. Returns (seconds, errors, tasks seen COMPLETED in the kept records)."""
        t0 = time.time()
        cmds = [self.sbatch_cmd(c, array=n) for n, c in groups]
        with concurrent.futures.ThreadPoolExecutor(len(cmds)) as pool:
            results = list(pool.map(lambda c: run(c, env=self.env, timeout=60), cmds))
        return self._finish(t0, results, sum(n for n, _ in groups), timeout_s)

    def separate(self, n, command, concurrency, timeout_s):
        """n one-task jobs (`sbatch --wrap CMD`), `concurrency` sbatch clients at a time."""
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            results = list(pool.map(lambda _: run(self.sbatch_cmd(command), env=self.env,
                                                  timeout=60), range(n)))
        return self._finish(t0, results, n, timeout_s)

    def _finish(self, t0, results, n_tasks, timeout_s):
        ids, errors = set(), []
        for r in results:
            if r.returncode == 0 and r.stdout.strip():
                ids.add(r.stdout.strip().split(";")[0])
            else:
                errors.append(f"sbatch: exit {r.returncode}: {r.stderr.strip()[-200:]}")
        elapsed, more, completed = self._wait_done(t0, ids, n_tasks, timeout_s)
        return elapsed, errors + more, completed
