"""The pipeline on a real SLURM cluster. A one-node cluster (munged, slurmctld, slurmd; one GPU declared as a GRES) is
started in a temporary folder; in a copy of the repository, `snakemake --profile profiles/slurm` runs the CPU tier
(the build and verify jobs through the scheduler, the cheap local rules where Snakemake runs, up to the aggregated
tables and the claims' verdicts), and every cluster job is found in the scheduler's own records (squeue, slurmd's log)
as done. The build is a small one (two variants for one architecture, one length to verify: config overrides), since
the whole build is the pipeline test's (tests/test_pipeline.py) and what is tested here is the scheduler's part. Then
a GPU rule's job, as the profile renders it (no --ntasks-per-gpu), is accepted by sbatch and started on the node; it
fails there for want of a real GPU. The daemons are stopped by their PIDs when the module ends, also on failure.

Needs root (slurmd launches the jobs) and Slurm with MUNGE (`make slurm` installs them from Debian's packages; CI
runs `make test` as root). Not root: skipped, saying why, unless FA2_REQUIRE_SLURM=1 (set by .ci/run), which makes
it a failure. FA2_SKIP_SLURM=1 (`make test SLURM=0`): skipped, saying so."""
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DAEMONS = ["munged", "slurmctld", "slurmd"]
CLIENTS = ["sbatch", "srun", "squeue", "scontrol", "sinfo", "scancel"]
PARTITION, ACCOUNT = "fa2test", "fa2"
# The job step (snakemake-executor-plugin-slurm-jobstep) drops every SLURM_* variable, SLURM_CONF included, before
# its `srun`: there srun finds the configuration only where Slurm looks without it, /etc/slurm/slurm.conf or, on a
# node whose slurmd runs configless, /run/slurm/conf/slurm.conf. The test cluster's configuration stays in its
# temporary folder; this link to that folder is made for the test's lifetime (as configless slurmd makes it).
RUN_CONF = Path("/run/slurm/conf")
ETC_CONF = Path("/etc/slurm/slurm.conf")
SBIN_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"  # the daemons live in sbin
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")


def tail(path: Path, n: int = 3000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else f"({path} does not exist)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_rules() -> set:
    """The rules that declare a GPU (`gpu=1` among their resources) in workflow/rules/*.smk."""
    found = set()
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for name, body in re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", smk.read_text(), flags=re.M):
            if re.search(r"^\s+resources:\n(?:\s+\w+=.*\n)*?\s+gpu=", body, flags=re.M):
                found.add(name)
    return found


def test_the_slurm_profile_sends_gpu_jobs_without_ntasks_per_gpu():
    """Every GPU rule has tasks_per_gpu: 0 in the profile's set-resources (kept when --default-resources is given on
    the command line), so that the plugin does not pair --ntasks-per-gpu with --cpus-per-task."""
    rules = gpu_rules()
    assert {"verify_gpu", "compile", "bench", "profile", "timer_check", "ceilings", "qwen3_e2e"} <= rules, rules
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    missing = sorted(r for r in rules if (profile.get("set-resources") or {}).get(r, {}).get("tasks_per_gpu") != 0)
    assert not missing, f"profiles/slurm/config.yaml: set-resources lacks tasks_per_gpu: 0 for {missing}"


class Cluster:
    """A one-node SLURM cluster in its own folder: its configuration, state, spool, logs and MUNGE key; its own
    ports; munged on its own socket."""

    def __init__(self, top: Path):
        self.top = top
        self.etc, self.log = top / "etc", top / "log"
        self.procs = {}
        self.linked = False
        self.node = self._node_line()
        self.env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        self.env["SLURM_CONF"] = str(self.etc / "slurm.conf")
        self.env["PATH"] = SBIN_PATH

    @staticmethod
    def _node_line() -> dict:
        """This machine as slurmd sees it (`slurmd -C`): name, CPUs and their layout, memory."""
        out = subprocess.run([shutil.which("slurmd", path=SBIN_PATH), "-C"], capture_output=True, text=True, timeout=60).stdout
        line = next(ln for ln in out.splitlines() if ln.startswith("NodeName="))
        return dict(kv.split("=", 1) for kv in line.split())

    def write_config(self):
        for d in ("etc", "log", "state", "spool", "munge"):
            (self.top / d).mkdir(mode=0o755)
        key = self.top / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        n = self.node
        memory = int(int(n["RealMemory"]) * 0.8)  # below what the machine has, or slurmd would drain the node
        layout = " ".join(f"{k}={n[k]}" for k in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket",
                                                   "ThreadsPerCore") if k in n)
        t = self.top
        (self.etc / "slurm.conf").write_text(f"""\
ClusterName=fa2test
SlurmctldHost={n['NodeName']}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={t}/munge/munge.sock
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# No accounting database: squeue answers for the finished jobs, which the controller keeps for a day.
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
MinJobAge=86400
ReturnToService=2
StateSaveLocation={t}/state
SlurmdSpoolDir={t}/spool
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd.pid
SlurmctldLogFile={t}/log/slurmctld.log
SlurmdLogFile={t}/log/slurmd.log
GresTypes=gpu
NodeName={n['NodeName']} NodeAddr=127.0.0.1 {layout} RealMemory={memory} Gres=gpu:1 State=UNKNOWN
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        # The GPU is declared, not real: a job gets it, and fails when it looks for a device.
        (self.etc / "gres.conf").write_text(f"NodeName={n['NodeName']} Name=gpu File=/dev/null Count=1\n")

    def _start(self, name, argv):
        out = open(self.log / f"{name}.out", "w")
        self.procs[name] = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                            cwd=self.top, start_new_session=True)

    def _wait(self, what, ok, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    pytest.fail(f"{name} exited ({p.returncode}) while waiting for {what}:\n"
                                f"{tail(self.log / f'{name}.out')}\n{tail(self.log / f'{name}.log')}")
            if ok():
                return
            time.sleep(0.5)
        pytest.fail(f"the test cluster: no {what} after {timeout} s\n" + "\n".join(
            f"--- {name}\n{tail(self.log / f'{name}.out')}\n{tail(self.log / f'{name}.log')}" for name in self.procs))

    def run(self, *argv, check=True):
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        assert not check or proc.returncode == 0, f"{' '.join(argv)}: {proc.stdout}{proc.stderr}"
        return proc.stdout

    def start(self):
        self.write_config()
        m = self.top / "munge"
        self._start("munged", ["munged", "--foreground", f"--key-file={m}/munge.key", f"--socket={m}/munge.sock",
                               f"--pid-file={m}/munged.pid", f"--log-file={self.log}/munged.log",
                               f"--seed-file={m}/munged.seed"])
        self._wait("MUNGE socket", (m / "munge.sock").exists)
        self._start("slurmctld", ["slurmctld", "-D"])
        self._wait("answer from slurmctld", lambda: "UP" in self.run("scontrol", "ping", check=False))
        self.made_run_dir = not RUN_CONF.parent.exists()
        RUN_CONF.parent.mkdir(parents=True, exist_ok=True)
        RUN_CONF.symlink_to(self.etc)
        self.linked = True
        self._start("slurmd", ["slurmd", "-D"])
        self._wait("idle node", lambda: self.run("sinfo", "-h", "-o", "%t", check=False).strip() == "idle")

    def jobs(self) -> dict:
        """Every job the controller knows, finished ones included: id -> (state, comment, name)."""
        out = self.run("squeue", "--states=all", "--noheader", "--format=%i|%T|%k|%j")
        return {f[0]: tuple(f[1:]) for f in (ln.split("|") for ln in out.splitlines() if ln.strip())}

    def stop(self):
        """Cancel what is left, then stop the daemons by their PIDs (slurmd, slurmctld, munged), and remove the link."""
        try:
            if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
                live = [i for i, (state, *_) in self.jobs().items() if state in ("PENDING", "RUNNING", "COMPLETING")]
                if live:
                    self.run("scancel", *live, check=False)
                    end = time.monotonic() + 30
                    while time.monotonic() < end and any(
                            s in ("RUNNING", "COMPLETING") for s, *_ in self.jobs().values()):
                        time.sleep(1)
        except Exception as e:  # the daemons are stopped anyway
            print(f"test cluster: cancelling its jobs failed: {e}", file=sys.stderr)
        finally:
            for name in ("slurmd", "slurmctld", "munged"):
                p = self.procs.get(name)
                if p is None or p.poll() is not None:
                    continue
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=30)
            if self.linked and RUN_CONF.is_symlink():
                RUN_CONF.unlink()
                if self.made_run_dir:
                    RUN_CONF.parent.rmdir()


SKIP_SLURM = ("FA2_SKIP_SLURM=1 (make test SLURM=0): the SLURM test did not run; plain `make test` runs it (it "
              "installs Slurm and MUNGE system-wide where they are missing, and starts their daemons)")


def preflight():
    """What the test needs of the machine, each lack said with its remedy."""
    if os.environ.get("FA2_SKIP_SLURM") == "1":
        if os.environ.get("FA2_REQUIRE_SLURM") == "1":
            pytest.fail("FA2_SKIP_SLURM=1 and FA2_REQUIRE_SLURM=1: the SLURM test is both skipped and required")
        pytest.skip(SKIP_SLURM)
    missing = [c for c in DAEMONS + CLIENTS if not shutil.which(c, path=SBIN_PATH)]
    if missing:
        pytest.fail(f"Slurm and MUNGE are needed for this test, and {missing} are not installed: `make slurm` "
                    f"installs them where apt-get exists (Debian, Ubuntu: apt-get install slurm-wlm munge; Fedora: "
                    f"dnf install slurm slurm-slurmctld slurm-slurmd munge)")
    if os.geteuid() != 0:
        why = ("tests/test_slurm.py starts slurmd, which must run as root to launch jobs; this run is not root, so "
               "the SLURM test did not run (CI runs it as root)")
        if os.environ.get("FA2_REQUIRE_SLURM") == "1":
            pytest.fail(why + "; FA2_REQUIRE_SLURM=1 asks for it")
        pytest.skip(why)
    if ETC_CONF.exists():
        pytest.fail(f"{ETC_CONF} exists: this machine has a Slurm of its own, whose configuration the job steps "
                    f"would read instead of the test cluster's (they drop SLURM_CONF); run the test elsewhere")
    if RUN_CONF.is_symlink() and os.readlink(RUN_CONF).startswith(tempfile.gettempdir() + "/fa2-slurm-"):
        pid = Path(os.readlink(RUN_CONF)).parent / "slurmctld.pid"
        alive = pid.exists() and Path(f"/proc/{pid.read_text().strip()}").exists()
        if not alive:
            RUN_CONF.unlink()  # left by a run of this test that was killed, whose controller is gone
    if RUN_CONF.exists() or RUN_CONF.is_symlink():
        pytest.fail(f"{RUN_CONF} exists (-> {os.readlink(RUN_CONF) if RUN_CONF.is_symlink() else 'a folder'}): a "
                    f"configless slurmd runs here, or another run of this test (its slurmctld.pid beside the link's "
                    f"target names its controller)")


@pytest.fixture(scope="module")
def cluster():
    preflight()
    top = Path(tempfile.mkdtemp(prefix="fa2-slurm-"))
    top.chmod(0o755)  # munged wants its socket's folders searchable by all
    c = Cluster(top)
    try:
        c.start()
        yield c
    finally:
        c.stop()
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def repo(cluster):
    """A copy of the working tree (the files git tracks or would track): results/ and .snakemake/ of its own."""
    dest = cluster.top / "repo"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True)
    if listed.returncode == 0:
        for rel in filter(None, listed.stdout.decode().split("\0")):
            src = ROOT / rel
            if src.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel)
    else:  # no git (a release archive): everything but what runs make
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
            ".git", ".venv", "results", ".snakemake", "logs", "benchmarks", "dist", "__pycache__", ".pytest_cache",
            ".hypothesis", "*.egg-info"))
    return dest


def snakemake_slurm(cluster, repo, *args, timeout=900):
    """The profile as a user runs it, the partition and account given on the command line; the test cluster's small
    jobs (1 CPU, 1 GB: it has 2 CPUs), its status from squeue (it keeps no accounting database), the first status
    check after 5 s, and the jobs' SLURM logs kept. The copy's own `kernels` first on the path (the installed one is
an editable install of the working tree)."""
    argv = [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm",
            "--default-resources", f"slurm_partition={PARTITION}", f"slurm_account={ACCOUNT}", "runtime=30",
            "mem_mb=1000", "cpus_per_task=1",
            "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "5",
            "--slurm-keep-successful-logs", *args]
    env = {**cluster.env, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")])),
           "GPU_LOCK_DIR": str(cluster.top)}  # gpu_pin's lock files: in the cluster's folder, not /tmp
    proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)
    return proc, proc.stdout + proc.stderr


def slurmd_log(cluster) -> str:
    return (cluster.log / "slurmd.log").read_text(errors="replace")


SMALL_BUILD = {"build": {"archs": [90], "variants": ["v0", "v7"]}, "verify_cpu": {"N": [1]}}


def test_the_cpu_tier_runs_through_slurm(cluster, repo):
    """The CPU tier through the profile, up to the claims' verdicts: every build and verify job passes through the
    scheduler, which records it as COMPLETED under the rule's name; slurmd launched its batch script and the step
    (`srun`) inside; the local rules ran where Snakemake runs."""
    (repo / "small-build.yaml").write_text(yaml.safe_dump(SMALL_BUILD))
    proc, out = snakemake_slurm(cluster, repo, "--configfile", "config/config.yaml", "small-build.yaml", "--",
                                "results/aggregate/claims.csv", "results/verify/cpu/correctness.csv")
    assert proc.returncode == 0, out[-6000:]
    assert (repo / "results" / "aggregate" / "claims.csv").stat().st_size > 1000

    submitted = {slurm_id: Path(log) for _, slurm_id, log in SUBMITTED.findall(out)}
    expected = {"rule_build_variants_wildcards_90", "rule_verify_cpu"}
    run_id = re.search(r"SLURM run ID: (\S+)", out).group(1)
    known = cluster.jobs()
    assert {known[i][1] for i in submitted if i in known} == expected, (submitted, known)
    log = slurmd_log(cluster)
    for slurm_id, job_log in submitted.items():
        state, comment, name = known[slurm_id]
        assert state == "COMPLETED" and name == run_id, (slurm_id, known[slurm_id])
        assert f"Launching batch job {slurm_id} " in log and f"StepId={slurm_id}.0 " in log, slurm_id
        rule = comment.removeprefix("rule_").split("_wildcards_")[0]
        assert f"rule {rule}:" in job_log.read_text(), job_log
    assert len(submitted) == len(expected)
    for rule in ("aggregate", "claims"):
        assert f"localrule {rule}:" in out, f"{rule} did not run as a local rule"
    print(f"SLURM jobs: {sorted((int(i), known[i][1], known[i][0]) for i in submitted)}")


def test_a_gpu_job_is_accepted_and_started(cluster, repo):
    """gpu_check, the first GPU rule of a run (every other GPU step waits for it), through the profile: sbatch gets
    --gpus=1 and no --ntasks-per-gpu, accepts it, and the scheduler starts it on the node with the GPU; its command
    runs (gpu_pin's line in the rule's log: no lock, SLURM gave the job its GPU) and fails for want of a real GPU."""
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    run = "run-slurm-gpu"
    target = f"results/staging/{config['gpu']}/{run}/gpu.json"
    proc, out = snakemake_slurm(cluster, repo, "--verbose", "--config", "measure=True", f"run={run}", "--", target,
                                timeout=600)
    assert "SLURM sbatch failed" not in out, out[-6000:]
    calls = [ln for ln in out.splitlines() if ln.startswith("sbatch call:") and "rule_gpu_check" in ln]
    assert len(calls) == 1, out[-6000:]
    flags = calls[0].split("--wrap=")[0]
    assert "--gpus=1" in flags and "--ntasks-per-gpu" not in flags, flags
    (job,) = [slurm_id for _, slurm_id, _ in SUBMITTED.findall(out)]
    show = cluster.run("scontrol", "show", "job", job)
    state = re.search(r"JobState=(\S+)", show).group(1)
    assert state in ("FAILED", "COMPLETED"), show  # FAILED here: no GPU; COMPLETED on a machine with one
    assert re.search(r"TresPerJob=gres[:/]gpu:1", show), show
    assert "NtasksPerTRES" not in show, show
    assert not re.search(r"StartTime=Unknown", show), show
    log = slurmd_log(cluster)
    assert f"Launching batch job {job} " in log and f"StepId={job}.0 " in log, log[-3000:]
    rule_log = repo / f"logs/gpu_check/{run}.log"
    assert rule_log.read_text().startswith("gpu_pin: running on GPU"), tail(rule_log)
    # SLURM gave the job its GPU: gpu_pin takes no lock there (a lock keyed by the index every job sees, 0, would
    # make the GPU jobs of a node wait for each other)
    assert "(no lock: SLURM job " in rule_log.read_text().splitlines()[0], tail(rule_log)
    if state == "FAILED":
        assert proc.returncode != 0
    print(f"GPU job {job}: {state}; {flags.split(' -p ')[1] if ' -p ' in flags else flags}")
