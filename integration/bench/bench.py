#!/usr/bin/env python3
"""agentcage side-by-side benchmark against runc and crun (issue 6).

Started by run.sh inside a private mount namespace in which
/sys/fs/cgroup/unified is unmounted (on hybrid cgroups Debian's crun 1.8.1
makes no cgroup at all); all three runtimes run in that same namespace.  Every figure is
taken by timeit (a small C stopwatch: fork/exec/wait4), never through a
shell.  Runtimes are interleaved A B C A B C ... so machine noise hits all
alike; the table shows medians and ratios.
"""
import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

BENCH_PARENT = "agentcage-bench"  # cgroup parent, in every hierarchy
CGROUP_ROOT = "/sys/fs/cgroup"
EGRESS_PID_DIR = "/run/agentcage-egress"  # agentcage-egress keeps ID.pid here


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = a.workdir
        self.rootfs = a.rootfs
        self.timeit_bin = a.timeit
        self.tag = a.tag  # unique per run, in every container id
        self.bundles = os.path.join(self.work, "bundles")
        # tier 3's approval gate reads grants from here (an operator's
        # `agentcage approve ID`, made before the clock starts)
        self.approvals = os.path.join(self.work, "approvals")
        os.makedirs(self.approvals, mode=0o700, exist_ok=True)
        os.makedirs(self.bundles, exist_ok=True)
        self.state_roots = {
            "agentcage": os.path.join(a.stateroot, "agentcage"),
            "runc": os.path.join(a.stateroot, "runc"),
            "crun": os.path.join(a.stateroot, "crun"),
            "runsc": os.path.join(a.stateroot, "runsc"),
        }
        self.binaries = {"agentcage": os.path.realpath(a.agentcage), "runc": a.runc, "crun": a.crun}
        # gVisor (section 9): runsc alone, as an operator would run it, and
        # agentcage's tier 1 with the operator's kernel-for-tier 1:gvisor
        self.runsc = a.runsc if a.runsc and os.access(a.runsc, os.X_OK) else None
        if self.runsc:
            self.binaries["runsc"] = self.runsc
        self.base_config = self.make_base_config()
        self.docker_seccomp = None
        if a.docker_config:
            with open(a.docker_config) as f:
                self.docker_seccomp = json.load(f)["linux"]["seccomp"]
        self.results = {}
        self.notes = []
        self.failures = 0
        self.tier_active = self.check_tier_mapping()
        self.smoke()

    # ---- set-up -------------------------------------------------------
    def make_base_config(self):
        d = os.path.join(self.work, "spec")
        os.makedirs(d, exist_ok=True)
        subprocess.run([self.binaries["agentcage"], "spec"], cwd=d, check=True)
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
        # crun 1.8.1 answers "unknown version specified" to 1.2.0; every
        # runtime gets the same document, so all get a 1.0 version string.
        c["ociVersion"] = "1.0.2-dev"
        c["process"]["terminal"] = False
        c["process"]["args"] = ["/bin/true"]
        c["root"] = {"path": self.rootfs, "readonly": True}
        return c

    def smoke(self):
        """One /bin/true per runtime before anything is timed: crun in
        particular must work in this namespace, or the bench is moot."""
        for v in ("agentcage", "runc", "crun"):
            p = f"{self.tag}{v}smoke"
            b, cid = self.make_bundles(p, 1, ["/bin/true"])
            cp = subprocess.run(self.variant_cmd(v) + ["run", "--bundle", b.replace("%i", "0"), cid.replace("%i", "0")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            self.drop_bundles(p, 1)
            self.sweep(v)
            if cp.returncode != 0:
                sys.exit(f"bench: {v} cannot run a container here: {cp.stderr.strip()}")
        log("agentcage, runc and crun each ran /bin/true in the bench namespace")

    def check_tier_mapping(self):
        r = subprocess.run([self.binaries["agentcage"], "policy", "show", "--tier", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            self.notes.append("tier mapping not active (`agentcage policy show --tier 1` failed): "
                              "tier rows measure agentcage with --default-tier N, which currently behaves like plain")
            return False
        return True

    def variant_cmd(self, v):
        """Argument prefix (binary and global flags) of a variant name:
        agentcage, runc, crun, t0..t3 (agentcage --default-tier N),
        g1 (tier 1 under gVisor), runsc (gVisor's runtime alone, with the
        platform and network agentcage gives it at tier 1), and X-docker
        (X loading Docker's default seccomp profile)."""
        rt = v.split("-")[0]
        if rt == "g1":
            return [self.binaries["agentcage"], "--root", self.state_roots["agentcage"], "--default-tier", "1",
                    "--kernel-for-tier", "1:gvisor", "--runsc", self.runsc]
        if rt == "runsc":
            return [self.runsc, "--root", self.state_roots["runsc"], "--platform=ptrace", "--network=none"]
        if rt.startswith("t") and rt[1:].isdigit():
            return [self.binaries["agentcage"], "--root", self.state_roots["agentcage"], "--default-tier", rt[1:],
                    "--approvals-dir", self.approvals]
        return [self.binaries[rt], "--root", self.state_roots[rt]]

    def approve(self, cid, bundle):
        # a grant is for one create of one config (its digest): made from the
        # bundle with the same operator flags the run uses
        subprocess.run([self.binaries["agentcage"], "--default-tier", "3", "--approvals-dir", self.approvals,
                        "approve", cid, "--for", "60m", "--bundle", bundle],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def make_bundles(self, prefix, n, args, seccomp=None, edit=None):
        """Writes n bundles named PREFIX-0..n-1 (each just a config.json; the
        read-only rootfs is shared through an absolute root.path); the
        container id is the bundle name and the cgroup /agentcage-bench/ID."""
        for i in range(n):
            cid = f"{prefix}-{i}"
            d = os.path.join(self.bundles, cid)
            os.makedirs(d, exist_ok=True)
            c = json.loads(json.dumps(self.base_config))
            c["process"]["args"] = args
            c["linux"]["cgroupsPath"] = f"/{BENCH_PARENT}/{cid}"
            if seccomp is not None:
                c["linux"]["seccomp"] = seccomp
            if edit is not None:
                edit(c)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(c, f)
            if prefix[len(self.tag):].startswith("t3"):
                self.approve(cid, d)
        return os.path.join(self.bundles, prefix + "-%i"), prefix + "-%i"

    def drop_bundles(self, prefix, n):
        for i in range(n):
            shutil.rmtree(os.path.join(self.bundles, f"{prefix}-{i}"), ignore_errors=True)

    # ---- running timeit -----------------------------------------------
    def timeit(self, steps, n, jobs=1, subreaper=True):
        argv = [self.timeit_bin, "-n", str(n), "-j", str(jobs)] + (["-s"] if subreaper else []) + ["--"]
        for k, s in enumerate(steps):
            if k:
                argv.append("---")
            argv += s
        # stderr goes to a file, not a pipe: a container left running holds
        # the runtime's stderr open, and a pipe would never see EOF.
        errlog = os.path.join(self.work, "timeit.err")
        with open(errlog, "w") as ef:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=ef, text=True)
        with open(errlog) as ef:
            err = ef.read().strip().splitlines()
        out = {"steps": [[] for _ in steps], "self_cpu_ns": 0, "total": None}
        for line in r.stdout.splitlines():
            f = line.split()
            if f[0] == "step":
                kv = dict(zip(f[2::2], f[3::2]))
                out["steps"][int(f[1])].append({k: int(x) for k, x in kv.items()})
            elif f[0] == "self":
                out["self_cpu_ns"] += int(f[4])
            elif f[0] == "total":
                out["total"] = {k: int(x) for k, x in zip(f[1::2], f[2::2])}
        if r.returncode != 0 or out["total"] is None:
            self.failures += 1
            log(f"timeit failed (rc {r.returncode}) for {' '.join(steps[0][:6])}...: {' | '.join(err[-3:])}")
        # CPU of everything reaped, less the workers' own fork/wait bookkeeping.
        if out["total"]:
            out["total"]["cpu_ns"] -= out["self_cpu_ns"]
        return out

    def sweep(self, v):
        """Deletes whatever a variant left behind in its state root."""
        cmd = self.variant_cmd(v)
        r = subprocess.run(cmd + ["list", "-q"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for cid in r.stdout.split():
            if cid.startswith(self.tag):
                subprocess.run(cmd + ["delete", "--force", cid], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    # ---- 1 + 2: one container's lifecycle -----------------------------
    def bench_lifecycle(self, variants, rounds, per_round, key="lifecycle"):
        log(f"lifecycle: {rounds} rounds x {per_round} per variant, order {' '.join(variants)}")
        res = {v: {"run": [], "create": [], "start": [], "delete": [], "run_total_cpu": [], "csd_total_cpu": []}
               for v in variants}
        for r in range(rounds):
            for v in variants:
                cmd = self.variant_cmd(v)
                p = f"{self.tag}{v}r{r}"
                b, cid = self.make_bundles(p, per_round, ["/bin/true"])
                o = self.timeit([cmd + ["run", "--bundle", b, cid]], per_round)
                res[v]["run"] += o["steps"][0]
                if o["total"]:
                    res[v]["run_total_cpu"].append(o["total"]["cpu_ns"] / per_round)
                self.drop_bundles(p, per_round)
                self.sweep(v)

                p = f"{self.tag}{v}l{r}"
                b, cid = self.make_bundles(p, per_round, ["/bin/true"])
                o = self.timeit([cmd + ["create", "--bundle", b, cid], cmd + ["start", cid],
                                 cmd + ["delete", "--force", cid]], per_round)
                for k, step in enumerate(("create", "start", "delete")):
                    res[v][step] += o["steps"][k]
                if o["total"]:
                    res[v]["csd_total_cpu"].append(o["total"]["cpu_ns"] / per_round)
                self.drop_bundles(p, per_round)
                self.sweep(v)
        summary = {}
        for v, d in res.items():
            s = {}
            for step in ("run", "create", "start", "delete"):
                ok = [x for x in d[step] if x["status"] == 0]
                s[step] = {"wall_ms": median([x["wall_ns"] / 1e6 for x in ok]),
                           "cpu_ms": median([x["cpu_ns"] / 1e6 for x in ok]),
                           "maxrss_kb": median([x["maxrss_kb"] for x in ok]),
                           "n": len(ok), "failed": len(d[step]) - len(ok)}
            s["run_total_cpu_ms"] = median(d["run_total_cpu"]) / 1e6
            s["csd_total_cpu_ms"] = median(d["csd_total_cpu"]) / 1e6
            s["csd_wall_ms"] = s["create"]["wall_ms"] + s["start"]["wall_ms"] + s["delete"]["wall_ms"]
            summary[v] = s
        self.results[key] = summary

    # ---- 3: throughput --------------------------------------------------
    def bench_throughput(self, variants, ns, jobs_list, reps):
        """Each (N, J) batch per runtime, interleaved, repeated reps times;
        the table keeps the median of the repetitions."""
        log(f"throughput: N={ns} jobs={jobs_list} x{reps} variants {' '.join(variants)}")
        raw = {}
        for rep in range(reps):
            for n in ns:
                for j in jobs_list:
                    for v in variants:
                        p = f"{self.tag}{v}n{n}j{j}r{rep}"
                        b, cid = self.make_bundles(p, n, ["/bin/true"])
                        o = self.timeit([self.variant_cmd(v) + ["run", "--bundle", b, cid]], n, jobs=j)
                        self.drop_bundles(p, n)
                        self.sweep(v)
                        steps = sorted(o["steps"][0], key=lambda x: x["iter"])
                        ok = [x for x in steps if x["status"] == 0]
                        fifth = max(1, n // 5)
                        wall = o["total"]["wall_ns"] / 1e9 if o["total"] else float("nan")
                        raw.setdefault(f"{v}/{n}/{j}", []).append({
                            "cps": len(ok) / wall if wall else float("nan"),
                            "latency_ms": median([x["wall_ns"] / 1e6 for x in ok]),
                            "first_fifth_ms": median([x["wall_ns"] / 1e6 for x in steps[:fifth]]),
                            "last_fifth_ms": median([x["wall_ns"] / 1e6 for x in steps[-fifth:]]),
                            "cpu_ms_per_container": (o["total"]["cpu_ns"] / 1e6 / n) if o["total"] else float("nan"),
                            "failed": n - len(ok)})
                        log(f"  rep {rep} {v} N={n} j={j}: {raw[f'{v}/{n}/{j}'][-1]['cps']:.1f} containers/s")
        out = {}
        for key, rs in raw.items():
            out[key] = {k: median([r[k] for r in rs]) for k in rs[0] if k != "failed"}
            out[key]["failed"] = sum(r["failed"] for r in rs)
            out[key]["reps"] = len(rs)
        self.results["throughput"] = out

    # ---- 4: exec --------------------------------------------------------
    def bench_exec(self, variants, rounds, per_round):
        log(f"exec: {rounds} rounds x {per_round}")
        ids = {}
        for v in variants:
            p = f"{self.tag}{v}x"
            b, cid = self.make_bundles(p, 1, ["/bin/sleep", "1000000"])
            cmd = self.variant_cmd(v)
            self.timeit([cmd + ["create", "--bundle", b, cid], cmd + ["start", cid]], 1, subreaper=False)
            ids[v] = f"{p}-0"
        res = {v: [] for v in variants}
        for _ in range(rounds):
            for v in variants:
                o = self.timeit([self.variant_cmd(v) + ["exec", ids[v], "/bin/true"]], per_round, subreaper=False)
                res[v] += o["steps"][0]
        for v in variants:
            subprocess.run(self.variant_cmd(v) + ["delete", "--force", ids[v]],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.drop_bundles(f"{self.tag}{v}x", 1)
        self.results["exec"] = {v: {"wall_ms": median([x["wall_ns"] / 1e6 for x in d if x["status"] == 0]),
                                    "cpu_ms": median([x["cpu_ns"] / 1e6 for x in d if x["status"] == 0]),
                                    "maxrss_kb": median([x["maxrss_kb"] for x in d if x["status"] == 0]),
                                    "failed": sum(1 for x in d if x["status"] != 0)} for v, d in res.items()}

    # ---- 5: many long-running containers --------------------------------
    @staticmethod
    def smaps_rollup(pid):
        rss = pss = 0
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss = int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss = int(line.split()[1])
        except OSError:
            pass
        return rss, pss

    @staticmethod
    def kernel_kib(pid):
        """What RSS does not show of a process: its page tables (VmPTE) and
        its kernel stack (16 KiB per thread on x86_64)."""
        pte, threads = 0, 1
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmPTE:"):
                        pte = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
        except OSError:
            return 0
        return pte + 16 * threads

    def resident_processes(self, prefix):
        """Splits the processes of the bench's containers (by cgroup, or by
        a command line naming them) into what the runtime keeps alive (any
        binary of the runtime: agentcage, agentcage-watchdog, the
        agentcage-egress proxy of tiers 2-3, runc, crun)
        and the workload (everything else: busybox sleep)."""
        runtime_dirs = {os.path.dirname(self.binaries["agentcage"])}
        runtime_exes = set(self.binaries.values())
        owned, workload = set(), set()
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                exe = os.readlink(f"/proc/{d}/exe").replace(" (deleted)", "")
                with open(f"/proc/{d}/cgroup") as f:
                    cg = f.read()
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmdline = f.read().decode(errors="replace")
            except OSError:
                continue
            if f"/{BENCH_PARENT}/{prefix}" not in cg and prefix not in cmdline:
                continue
            # A container's exe reads as its path inside the container
            # (/bin/busybox), which is never a runtime's.
            if exe in runtime_exes or os.path.dirname(exe) in runtime_dirs:
                owned.add(int(d))
            else:
                workload.add(int(d))
        # a tier-2/3 container's egress proxy lives outside its cgroup
        owned |= self.egress_processes(prefix)
        return owned, workload

    @staticmethod
    def egress_processes(prefix):
        """The egress proxies of the containers PREFIX-*: the daemon named
        in its pid file (named by the container id; the audit writer) and
        its children (the worker), when they are named agentcage-egress
        (the program, or agentcage's in-process proxy)."""
        writers = set()
        try:
            pid_files = os.listdir(EGRESS_PID_DIR)
        except OSError:
            pid_files = []
        for name in pid_files:
            if not name.startswith(prefix + "-") or not name.endswith(".pid"):
                continue
            try:
                with open(os.path.join(EGRESS_PID_DIR, name)) as f:
                    pid = int(f.read().split()[0])
                # the program, or the runtime that forked it in-process
                # (named agentcage-egress, cut to 15 bytes by the kernel)
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "agentcage-egres":
                        writers.add(pid)
            except (OSError, ValueError, IndexError):
                continue
        procs = set(writers)
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid in writers:
                procs.add(int(d))
        return procs

    @staticmethod
    def memcg_usages(prefix, n):
        """KiB in the v1 memory cgroup of each container PREFIX-0..n-1."""
        out = []
        for i in range(n):
            try:
                with open(f"{CGROUP_ROOT}/memory/{BENCH_PARENT}/{prefix}-{i}/memory.usage_in_bytes") as f:
                    out.append(int(f.read()) / 1024)
            except OSError:
                pass
        return out

    def bench_alive(self, variants, n, key="alive"):
        log(f"alive: {n} sleeping containers per variant")
        out = {}
        for v in variants:
            cmd = self.variant_cmd(v)
            p = f"{self.tag}{v}a"
            b, cid = self.make_bundles(p, n, ["/bin/sleep", "1000000"])
            o = self.timeit([cmd + ["create", "--bundle", b, cid], cmd + ["start", cid]], n, jobs=2, subreaper=False)
            started = sum(1 for x in o["steps"][1] if x["status"] == 0)
            time.sleep(0.5)  # let anything a runtime leaves behind settle
            owned, workload = self.resident_processes(p)
            every_pss = sum(self.smaps_rollup(pid)[1] + self.kernel_kib(pid) for pid in owned | workload)
            owned_rss = sum(self.smaps_rollup(pid)[0] for pid in owned)
            owned_pss = sum(self.smaps_rollup(pid)[1] for pid in owned)
            owned_kernel = sum(self.kernel_kib(pid) for pid in owned)
            work_pss = sum(self.smaps_rollup(pid)[1] for pid in workload)
            egress = self.egress_processes(p)
            egress_rss = sum(self.smaps_rollup(x)[0] for x in egress)
            egress_pss = sum(self.smaps_rollup(x)[1] for x in egress)
            egress_kernel = sum(self.kernel_kib(x) for x in egress)
            memcg = self.memcg_usages(p, n)
            lst = self.timeit([cmd + ["list"]], 20, subreaper=False)
            st = self.timeit([cmd + ["state", f"{p}-{n // 2}"]], 20, subreaper=False)
            self.timeit([cmd + ["delete", "--force", cid]], n, jobs=2, subreaper=False)
            self.sweep(v)
            self.drop_bundles(p, n)
            out[v] = {"started": started, "owned_procs": len(owned),
                      "owned_rss_kib_per_ctr": owned_rss / max(started, 1),
                      "owned_pss_kib_per_ctr": owned_pss / max(started, 1),
                      "owned_kernel_kib_per_ctr": owned_kernel / max(started, 1),
                      "workload_pss_kib_per_ctr": work_pss / max(started, 1),
                      "egress_procs": len(egress),
                      "egress_rss_kib_per_ctr": egress_rss / max(started, 1),
                      "egress_pss_kib_per_ctr": egress_pss / max(started, 1),
                      "egress_kernel_kib_per_ctr": egress_kernel / max(started, 1),
                      "memcg_kib_median": median(memcg),
                      "all_procs": len(owned | workload),
                      "all_pss_kernel_kib_per_ctr": every_pss / max(started, 1),
                      "list_ms": median([x["wall_ns"] / 1e6 for x in lst["steps"][0]]),
                      "state_ms": median([x["wall_ns"] / 1e6 for x in st["steps"][0]])}
            log(f"  {v}: {started} alive, {len(owned)} runtime-owned processes, list {out[v]['list_ms']:.1f} ms")
        self.results[key] = out

    # ---- 8: many tier-2 sleepers at once (issue 20) ----------------------
    @staticmethod
    def mem_available_kib():
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1])
        return 0

    def bench_many(self, v, n, jobs):
        """n containers of variant v (tier 2: each with its watchdog and
        its egress proxy's writer and worker) created and started by `jobs`
        workers; the time until all run, the host's MemAvailable they took
        per container, and the resident cost of the runtime's processes per
        kind (watchdog, proxy)."""
        log(f"many: {n} sleeping {v} containers, {jobs} workers")
        cmd = self.variant_cmd(v)
        p = f"{self.tag}{v}m"
        b, cid = self.make_bundles(p, n, ["/bin/sleep", "1000000"])
        before = self.mem_available_kib()
        o = self.timeit([cmd + ["create", "--bundle", b, cid], cmd + ["start", cid]], n, jobs=jobs, subreaper=False)
        started = sum(1 for x in o["steps"][1] if x["status"] == 0)
        time.sleep(1.0)
        after = self.mem_available_kib()
        owned, workload = self.resident_processes(p)
        egress = self.egress_processes(p)
        kinds = {"watchdog": set(), "proxy": egress}
        for pid in owned - egress:
            try:
                if os.path.basename(os.readlink(f"/proc/{pid}/exe").replace(" (deleted)", "")) == "agentcage-watchdog":
                    kinds["watchdog"].add(pid)
            except OSError:
                pass
        per = {}
        for k, pids in kinds.items():
            rss = [self.smaps_rollup(x)[0] for x in pids]
            per[k] = {"procs": len(pids),
                      "rss_kib_per_proc": median(rss),
                      "rss_kib_per_ctr": sum(rss) / max(started, 1),
                      "pss_kib_per_ctr": sum(self.smaps_rollup(x)[1] for x in pids) / max(started, 1),
                      "kernel_kib_per_ctr": sum(self.kernel_kib(x) for x in pids) / max(started, 1)}
        memcg = self.memcg_usages(p, n)
        d = self.timeit([cmd + ["delete", "--force", cid]], n, jobs=jobs, subreaper=False)
        self.sweep(v)
        self.drop_bundles(p, n)
        total_s = o["total"]["wall_ns"] / 1e9 if o["total"] else float("nan")
        self.results["many"] = {
            "variant": v, "n": n, "jobs": jobs, "started": started, "start_all_s": total_s,
            "containers_per_s": started / total_s if total_s else float("nan"),
            "mem_available_kib_per_ctr": (before - after) / max(started, 1),
            "memcg_kib_median": median(memcg), "kinds": per,
            "delete_all_s": d["total"]["wall_ns"] / 1e9 if d["total"] else float("nan")}
        log(f"  {started} of {n} started in {total_s:.1f} s, {(before - after) / max(started, 1):.0f} KiB "
            f"MemAvailable each")

    # ---- 6: syscall cost inside a container -----------------------------
    def bench_syscalls(self, variants, rounds, count):
        log(f"syscalls: {rounds} rounds, {count} getppid per sample")
        res = {v: [] for v in variants}
        for r in range(rounds):
            for v in variants:
                p = f"{self.tag}{v}s{r}"
                seccomp = None
                if v.endswith("-docker"):
                    seccomp = self.docker_seccomp
                elif v.endswith("-minimal"):
                    # The floor: any filter at all moves syscalls off the
                    # kernel's fast entry path; this one allows everything
                    # but kexec_load, so every call hits the action cache.
                    seccomp = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                               "syscalls": [{"names": ["kexec_load"], "action": "SCMP_ACT_ERRNO"}]}
                self.make_bundles(p, 1, ["/bin/sysbench", str(count), "3"], seccomp=seccomp)
                cp = subprocess.run(self.variant_cmd(v) + ["run", "--bundle", os.path.join(self.bundles, p + "-0"),
                                                           p + "-0"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                self.drop_bundles(p, 1)
                self.sweep(v)
                f = cp.stdout.split()
                if cp.returncode == 0 and f and f[0] == "getppid_ns":
                    res[v].append(float(f[1]))
                else:
                    self.failures += 1
                    log(f"  {v}: sysbench failed rc {cp.returncode}: {cp.stderr.strip()[-200:]}")
        # the best sample too: load on a shared machine only ever adds time
        self.results["syscalls"] = {v: {"getppid_ns": median(x), "best_ns": min(x) if x else float("nan"),
                                        "n": len(x)} for v, x in res.items()}

    # ---- clean-up -------------------------------------------------------
    # ---- 7: a download through the egress proxy ------------------------
    def bench_egress(self, size_mib, rounds, per_round):
        """SIZE_MIB MiB over HTTP from a server on the host's loopback, by
        busybox wget in a running container: directly (plain containers in
        the host's network namespace) and through a tier-2 container's egress
        proxy. Each download is an exec, less the median exec of /bin/true
        into the same container, so only the transfer is compared."""
        log(f"egress: {size_mib} MiB, {rounds} rounds x {per_round}")
        body = memoryview(b"\0" * (1 << 20))

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                # /small: a one-byte answer, for the latency the proxy adds
                # to a request (its first byte is all of it)
                small = self.path.endswith("/small")
                self.send_response(200)
                self.send_header("Content-Length", "1" if small else str(size_mib << 20))
                self.end_headers()
                if small:
                    self.wfile.write(b"\0")
                    return
                for _ in range(size_mib):
                    self.wfile.write(body)

            def log_message(self, *args):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        port = srv.server_address[1]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        # the proxy as a tier-2 create starts it, with test names and
        # ceilings a 100 MiB transfer fits (the defaults are 1 MiB/s and
        # 100 MiB): bench.test is the server on the host's loopback
        hooks = os.path.join(self.work, "egress-hooks")
        os.makedirs(hooks, exist_ok=True)
        wrapper = os.path.join(hooks, "agentcage-egress")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n"
                    f"exec {os.path.dirname(self.binaries['agentcage'])}/agentcage-egress "
                    "--test-resolve bench.test=127.0.0.1 --allow-cidr 127.0.0.1/32 "
                    "--max-rate 64g --max-bytes 64g \"$@\"\n")
        os.chmod(wrapper, 0o755)

        def host_network(c):
            c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"]

        def allow_bench(c):
            c.setdefault("annotations", {})["io.agentcage.egress"] = f"bench.test:{port}"

        variants = {"agentcage": (host_network, f"http://127.0.0.1:{port}/", "-Y off"),
                    "runc": (host_network, f"http://127.0.0.1:{port}/", "-Y off"),
                    "crun": (host_network, f"http://127.0.0.1:{port}/", "-Y off"),
                    "t2": (allow_bench, f"http://bench.test:{port}/", "-Y on")}
        ids, cmds = {}, {}
        try:
            for v, (edit, _, _) in variants.items():
                p = f"{self.tag}{v}e"
                b, cid = self.make_bundles(p, 1, ["/bin/sleep", "1000000"], edit=edit)
                cmds[v] = self.variant_cmd(v) + (["--hooks-dir", hooks] if v == "t2" else [])
                self.timeit([cmds[v] + ["create", "--bundle", b, cid], cmds[v] + ["start", cid]], 1, subreaper=False)
                ids[v] = f"{p}-0"
            raw = {v: {"get": [], "small": [], "true": [], "fb": [], "fb_failed": 0} for v in variants}
            for _ in range(rounds):
                for v, (_, url, proxy) in variants.items():
                    get = cmds[v] + ["exec", ids[v], "/bin/sh", "-c", f"wget {proxy} -q -O /dev/null {url}"]
                    o = self.timeit([get], per_round, subreaper=False)
                    raw[v]["get"] += o["steps"][0]
                    small = cmds[v] + ["exec", ids[v], "/bin/sh", "-c", f"wget {proxy} -q -O /dev/null {url}small"]
                    # five times as many of the short ones: the difference
                    # they show is a fraction of an exec's own spread
                    o = self.timeit([small], 5 * per_round, subreaper=False)
                    raw[v]["small"] += o["steps"][0]
                    o = self.timeit([cmds[v] + ["exec", ids[v], "/bin/true"]], 5 * per_round, subreaper=False)
                    raw[v]["true"] += o["steps"][0]
                    # the same one-byte answer, timed inside the container
                    # from the connect to the first byte: the request
                    # alone, without an exec's spread
                    to = (["127.0.0.1", "3128", f"http://bench.test:{port}/small"] if v == "t2"
                          else ["127.0.0.1", str(port), "/small"])
                    cp = subprocess.run(cmds[v] + ["exec", ids[v], "/bin/firstbyte"] + to +
                                        [f"bench.test:{port}", str(10 * per_round)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    got = False
                    for line in cp.stdout.splitlines():
                        if line.startswith("firstbyte_us"):
                            raw[v]["fb"] += [float(x) for x in line.split()[1:]]
                            got = True
                        elif line.startswith("failed "):
                            raw[v]["fb_failed"] += int(line.split()[1])
                    if not got:
                        raw[v]["fb_failed"] += 10 * per_round
                        log(f"  {v}: firstbyte failed rc {cp.returncode}: {cp.stderr.strip()[-200:]}")
        finally:
            srv.shutdown()
            srv.server_close()
            for v in ids:
                subprocess.run(cmds[v] + ["delete", "--force", ids[v]], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                self.drop_bundles(f"{self.tag}{v}e", 1)
        out = {}
        for v, d in raw.items():
            ok = [x for x in d["get"] if x["status"] == 0]
            get_ms = median([x["wall_ns"] / 1e6 for x in ok])
            true_ms = median([x["wall_ns"] / 1e6 for x in d["true"] if x["status"] == 0])
            xfer = get_ms - true_ms
            small_ok = [x for x in d["small"] if x["status"] == 0]
            small_ms = median([x["wall_ns"] / 1e6 for x in small_ok]) - true_ms
            out[v] = {"download_ms": get_ms, "exec_true_ms": true_ms, "transfer_ms": xfer,
                      "small_request_ms": small_ms, "small_failed": len(d["small"]) - len(small_ok),
                      "first_byte_ms": median(d["fb"]) / 1000 if d["fb"] else float("nan"),
                      "first_byte_n": len(d["fb"]), "first_byte_failed": d["fb_failed"],
                      "mib_per_s": size_mib / (xfer / 1000) if xfer > 0 else float("nan"),
                      "cpu_ms": median([x["cpu_ns"] / 1e6 for x in ok]),
                      "failed": len(d["get"]) - len(ok), "size_mib": size_mib}
            log(f"  {v}: {xfer:.0f} ms for {size_mib} MiB ({out[v]['failed']} failed)")
        self.results["egress"] = out

    def cleanup(self):
        for v in ("agentcage", "runc", "crun") + (("runsc",) if self.runsc else ()):
            self.sweep(v)
        shutil.rmtree(self.bundles, ignore_errors=True)


# ---- the table ---------------------------------------------------------
def fmt(x, spec=".1f"):
    if x is None or (isinstance(x, float) and x != x):
        return "n/a"
    return format(x, spec)


def ratio(a, b):
    try:
        if a != a or b != b or b == 0:
            return "n/a"
        return f"{a / b:.2f}x"
    except TypeError:
        return "n/a"


def report(b, quick):
    R = b.results
    L = []
    lc = R.get("lifecycle", {})
    if lc:
        L.append("### 1. one container: `run` of /bin/true (run removes the container), and create / start / delete --force")
        L.append("")
        L.append("| runtime | run wall ms | run CPU ms | run peak RSS KiB | run all-proc CPU ms | create ms | start ms | delete ms | c+s+d wall ms | c+s+d all-proc CPU ms | create peak RSS KiB |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for v in ("agentcage", "runc", "crun", "t0", "t1", "t2", "t3"):
        if v not in lc:
            continue
        s = lc[v]
        L.append(f"| {v if not v.startswith('t') else 'agentcage tier ' + v[1:]} | {fmt(s['run']['wall_ms'])} | {fmt(s['run']['cpu_ms'])} | "
                 f"{fmt(s['run']['maxrss_kb'], '.0f')} | {fmt(s['run_total_cpu_ms'])} | {fmt(s['create']['wall_ms'])} | "
                 f"{fmt(s['start']['wall_ms'])} | {fmt(s['delete']['wall_ms'])} | {fmt(s['csd_wall_ms'])} | "
                 f"{fmt(s['csd_total_cpu_ms'])} | {fmt(s['create']['maxrss_kb'], '.0f')} |")
    if lc:
        ac, rc, cr = lc.get("agentcage"), lc.get("runc"), lc.get("crun")
        L.append("")
        L.append("| ratio (agentcage plain / other) | run wall | run CPU | run peak RSS | c+s+d wall | c+s+d all-proc CPU |")
        L.append("|---|---|---|---|---|---|")
        for name, o in (("/ crun", cr), ("/ runc", rc)):
            L.append(f"| agentcage {name} | {ratio(ac['run']['wall_ms'], o['run']['wall_ms'])} | "
                     f"{ratio(ac['run']['cpu_ms'], o['run']['cpu_ms'])} | {ratio(ac['run']['maxrss_kb'], o['run']['maxrss_kb'])} | "
                     f"{ratio(ac['csd_wall_ms'], o['csd_wall_ms'])} | {ratio(ac['csd_total_cpu_ms'], o['csd_total_cpu_ms'])} |")
        L.append("")
        L.append("### 2. tiers against agentcage plain (and crun plain)")
        L.append("")
        L.append("| tier | run wall ms | / agentcage plain | / crun plain | run CPU ms | peak RSS KiB | c+s+d wall ms | / plain |")
        L.append("|---|---|---|---|---|---|---|---|")
        for t in ("t0", "t1", "t2", "t3"):
            if t in lc:
                s = lc[t]
                L.append(f"| {t[1:]} | {fmt(s['run']['wall_ms'])} | {ratio(s['run']['wall_ms'], ac['run']['wall_ms'])} | "
                         f"{ratio(s['run']['wall_ms'], cr['run']['wall_ms'])} | {fmt(s['run']['cpu_ms'])} | "
                         f"{fmt(s['run']['maxrss_kb'], '.0f')} | {fmt(s['csd_wall_ms'])} | {ratio(s['csd_wall_ms'], ac['csd_wall_ms'])} |")
    tp = R.get("throughput", {})
    if tp:
        L.append("")
        L.append("### 3. throughput: `run` of true, N containers, J parallel workers")
        L.append("")
        L.append("")
        L.append("Medians of the repetitions; latency = one `run` command's wall time within the batch.")
        L.append("")
        L.append("| runtime | N | J | containers/s | / crun | median latency ms | first 1/5 ms | last 1/5 ms | all-proc CPU ms/ctr | failed |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for key, s in tp.items():
            v, n, j = key.split("/")
            c = tp.get(f"crun/{n}/{j}", {}).get("cps", float("nan"))
            L.append(f"| {v} | {n} | {j} | {fmt(s['cps'])} | {ratio(s['cps'], c)} | {fmt(s['latency_ms'])} | "
                     f"{fmt(s['first_fifth_ms'])} | {fmt(s['last_fifth_ms'])} | {fmt(s['cpu_ms_per_container'])} | {s['failed']} |")
    ex = R.get("exec", {})
    if ex:
        L.append("")
        L.append("### 4. `exec` of /bin/true into a running container")
        L.append("")
        L.append("| runtime | wall ms | CPU ms | peak RSS KiB | / crun wall | failed |")
        L.append("|---|---|---|---|---|---|")
        for v, s in ex.items():
            L.append(f"| {v} | {fmt(s['wall_ms'])} | {fmt(s['cpu_ms'])} | {fmt(s['maxrss_kb'], '.0f')} | "
                     f"{ratio(s['wall_ms'], ex['crun']['wall_ms'])} | {s['failed']} |")
    eg = R.get("egress", {})
    if eg:
        size = next(iter(eg.values()))["size_mib"]
        L.append("")
        L.append(f"### 7. a {size} MiB HTTP download from the host's loopback (busybox wget, exec'd)")
        L.append("")
        L.append("Direct: plain containers in the host's network namespace; t2: through the tier-2 container's "
                 "egress proxy. Transfer = the download's exec less an exec of /bin/true.")
        L.append("")
        L.append("| runtime | path | download exec ms | transfer ms | MiB/s | all-proc CPU ms | / agentcage direct | failed |")
        L.append("|---|---|---|---|---|---|---|---|")
        for v, s in eg.items():
            L.append(f"| {v} | {'egress proxy' if v == 't2' else 'direct'} | {fmt(s['download_ms'])} | "
                     f"{fmt(s['transfer_ms'])} | {fmt(s['mib_per_s'], '.0f')} | {fmt(s['cpu_ms'])} | "
                     f"{ratio(s['transfer_ms'], eg.get('agentcage', {}).get('transfer_ms', float('nan')))} | {s['failed']} |")
        if "small_request_ms" in eg.get("agentcage", {}):
            L.append("")
            L.append("A one-byte answer (its first byte is the whole of it), and what the proxy adds to agentcage's "
                     "direct request: timed inside the container from the connect to the first byte (firstbyte.c, "
                     "median of every request), and as the request's exec (busybox wget) less an exec of /bin/true.")
            L.append("")
            L.append("| runtime | path | first byte ms | added ms | requests | exec'd wget ms | added ms | failed |")
            L.append("|---|---|---|---|---|---|---|---|")
            for v, s in eg.items():
                fb, fb0 = s.get("first_byte_ms", float("nan")), eg["agentcage"].get("first_byte_ms", float("nan"))
                L.append(f"| {v} | {'egress proxy' if v == 't2' else 'direct'} | {fmt(fb, '.2f')} | {fmt(fb - fb0, '.2f')} | "
                         f"{s.get('first_byte_n', 0)} | {fmt(s['small_request_ms'], '.2f')} | "
                         f"{fmt(s['small_request_ms'] - eg['agentcage']['small_request_ms'], '.2f')} | "
                         f"{s['small_failed'] + s.get('first_byte_failed', 0)} |")
    al = R.get("alive", {})
    if al:
        L.append("")
        L.append("### 5. long-running containers (busybox sleep) alive at once")
        L.append("")
        L.append("| runtime | alive | runtime-owned processes | their RSS KiB/ctr | their PSS KiB/ctr | their page tables + kernel stacks KiB/ctr | workload PSS KiB/ctr | memcg usage KiB/ctr | list ms | state ms |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for v, s in al.items():
            L.append(f"| {v} | {s['started']} | {s['owned_procs']} | {fmt(s['owned_rss_kib_per_ctr'])} | "
                     f"{fmt(s['owned_pss_kib_per_ctr'])} | {fmt(s['owned_kernel_kib_per_ctr'])} | {fmt(s['workload_pss_kib_per_ctr'])} | {fmt(s['memcg_kib_median'], '.0f')} | "
                     f"{fmt(s['list_ms'])} | {fmt(s['state_ms'])} |")
    eg = {v: s for v, s in al.items() if s.get("egress_procs")}
    if eg:
        L.append("")
        L.append("Of those, the egress proxies of the tier-2/3 containers (a writer and a worker each, "
                 "outside the container's cgroup):")
        L.append("")
        L.append("| tier | proxy processes | their RSS KiB/ctr | their PSS KiB/ctr | their page tables + kernel stacks KiB/ctr |")
        L.append("|---|---|---|---|---|")
        for v, s in eg.items():
            L.append(f"| {v} | {s['egress_procs']} | {fmt(s['egress_rss_kib_per_ctr'])} | {fmt(s['egress_pss_kib_per_ctr'])} | "
                     f"{fmt(s['egress_kernel_kib_per_ctr'])} |")
    mn = R.get("many")
    if mn:
        L.append("")
        L.append(f"### 8. {mn['n']} tier-{mn['variant'][1:]} sleepers at once ({mn['jobs']} workers creating and starting)")
        L.append("")
        L.append("| started | time to start all s | containers/s | host MemAvailable taken KiB/ctr | memcg usage KiB/ctr | delete all s |")
        L.append("|---|---|---|---|---|---|")
        L.append(f"| {mn['started']} | {fmt(mn['start_all_s'])} | {fmt(mn['containers_per_s'])} | "
                 f"{fmt(mn['mem_available_kib_per_ctr'], '.0f')} | {fmt(mn['memcg_kib_median'], '.0f')} | {fmt(mn['delete_all_s'])} |")
        L.append("")
        L.append("| runtime process | processes | RSS KiB per process (median) | RSS KiB/ctr | PSS KiB/ctr | page tables + kernel stacks KiB/ctr |")
        L.append("|---|---|---|---|---|---|")
        for k, s in mn["kinds"].items():
            L.append(f"| {k} | {s['procs']} | {fmt(s['rss_kib_per_proc'], '.0f')} | {fmt(s['rss_kib_per_ctr'], '.0f')} | "
                     f"{fmt(s['pss_kib_per_ctr'], '.0f')} | {fmt(s['kernel_kib_per_ctr'], '.0f')} |")
    sc = R.get("syscalls", {})
    if sc:
        L.append("")
        L.append("### 6. getppid() inside the container (static probe, best of 3 rounds per sample; median and best of the samples)")
        L.append("")
        L.append("| runtime / filter | ns per call | / agentcage no filter | best sample ns | / agentcage no filter | samples |")
        L.append("|---|---|---|---|---|---|")
        base = sc.get("agentcage", {}).get("getppid_ns", float("nan"))
        best = sc.get("agentcage", {}).get("best_ns", float("nan"))
        for v, s in sc.items():
            label = {"agentcage": "agentcage, no filter", "runc": "runc, no filter", "crun": "crun, no filter"}.get(v, v)
            if v.endswith("-docker"):
                label = f"{v.split('-')[0]}, Docker default profile"
            if v.startswith("t"):
                label = f"agentcage tier {v[1]} filter"
                if v.endswith("-docker"):
                    label += " + Docker default profile (two filters, as under an engine)"
            if v.endswith("-minimal"):
                label = f"{v.split('-')[0]}, minimal filter (allow all but kexec_load)"
            L.append(f"| {label} | {fmt(s['getppid_ns'])} | {ratio(s['getppid_ns'], base)} | {fmt(s['best_ns'])} | "
                     f"{ratio(s['best_ns'], best)} | {s['n']} |")

    gv, gva = R.get("gvisor", {}), R.get("gvisor_alive", {})
    if gv:
        L.append("")
        L.append("### 9. gVisor: runsc alone, agentcage tier 1 under gVisor (agentcage -> runsc), and tier 1 on the host's kernel")
        L.append("")
        L.append("| runtime | run wall ms | run peak RSS KiB | create ms | start ms | delete ms | c+s+d wall ms | "
                 "resident per sleeping container KiB (PSS + page tables + kernel stacks, every process) | processes | memcg KiB |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        names = {"runsc": "runsc alone (--platform=ptrace --network=none)", "g1": "agentcage tier 1 under gVisor",
                 "t1": "agentcage tier 1 (namespaces)"}
        for v in ("runsc", "g1", "t1"):
            if v not in gv:
                continue
            s, al = gv[v], gva.get(v, {})
            L.append(f"| {names[v]} | {fmt(s['run']['wall_ms'])} | {fmt(s['run']['maxrss_kb'], '.0f')} | "
                     f"{fmt(s['create']['wall_ms'])} | {fmt(s['start']['wall_ms'])} | {fmt(s['delete']['wall_ms'])} | "
                     f"{fmt(s['csd_wall_ms'])} | {fmt(al.get('all_pss_kernel_kib_per_ctr', float('nan')), '.0f')} | "
                     f"{al.get('all_procs', 0) / max(al.get('started', 1), 1):.1f} | "
                     f"{fmt(al.get('memcg_kib_median', float('nan')), '.0f')} |")

    # targets
    L.append("")
    L.append("### targets (issues 6, 20 and 25)")
    L.append("")
    L.append("| target | measured | holds |")
    L.append("|---|---|---|")

    def target(name, measured, ok):
        L.append(f"| {name} | {measured} | {'yes' if ok else 'NO'} |")

    try:
        ac, rc, cr = lc["agentcage"], lc["runc"], lc["crun"]
        r1 = ac["run"]["wall_ms"] / cr["run"]["wall_ms"]
        r2 = ac["run"]["wall_ms"] / rc["run"]["wall_ms"]
        target("plain run wall <= 0.5x crun", f"{r1:.2f}x", r1 <= 0.5)
        rc1 = ac["run"]["cpu_ms"] / cr["run"]["cpu_ms"]
        target("plain run CPU <= 0.5x crun", f"{rc1:.2f}x", rc1 <= 0.5)
        target("plain run wall <= 0.3x runc", f"{r2:.2f}x", r2 <= 0.3)
        for t, goal in (("t0", 0.7), ("t1", 0.7), ("t3", 1.0)):
            if t in lc:
                r3 = lc[t]["run"]["wall_ms"] / cr["run"]["wall_ms"]
                target(f"tier-{t[1]} run wall <= {goal}x crun plain" + ("" if b.tier_active else " (tier mapping not active)"),
                       f"{r3:.2f}x", r3 <= goal)
        rr = ac["run"]["maxrss_kb"] / cr["run"]["maxrss_kb"]
        target("runtime peak RSS (run) <= crun", f"{ac['run']['maxrss_kb']:.0f} vs {cr['run']['maxrss_kb']:.0f} KiB", rr <= 1.0)
        if "t3" in lc:
            rr3 = lc["t3"]["run"]["maxrss_kb"] / cr["run"]["maxrss_kb"]
            target("tier-3 peak RSS (run) <= crun", f"{lc['t3']['run']['maxrss_kb']:.0f} vs {cr['run']['maxrss_kb']:.0f} KiB", rr3 <= 1.0)
    except (KeyError, ZeroDivisionError):
        pass
    ex = R.get("exec", {})
    if ex.get("crun", {}).get("wall_ms"):
        for v, goal in (("agentcage", 0.4), ("t1", 0.6), ("t3", 0.6)):
            if v in ex:
                r = ex[v]["wall_ms"] / ex["crun"]["wall_ms"]
                label = "plain" if v == "agentcage" else f"tier-{v[1]}"
                target(f"{label} exec wall <= {goal}x crun", f"{r:.2f}x", r <= goal)
    eg = R.get("egress", {})
    if eg.get("agentcage", {}).get("transfer_ms") and "t2" in eg:
        r = eg["t2"]["transfer_ms"] / eg["agentcage"]["transfer_ms"]
        target(f"egress: {eg['t2']['size_mib']} MiB through the proxy <= 1.2x direct (issue 18)",
               f"{eg['t2']['transfer_ms']:.0f} vs {eg['agentcage']['transfer_ms']:.0f} ms = {r:.2f}x", r <= 1.2)
        if eg["t2"].get("first_byte_n") and eg["agentcage"].get("first_byte_n"):
            added = eg["t2"]["first_byte_ms"] - eg["agentcage"]["first_byte_ms"]
            target("egress: first-byte latency the proxy adds <= 1 ms (issue 20)",
                   f"{added:.2f} ms (connect to first byte inside the container, through the proxy less direct)",
                   added <= 1.0)
    if tp:
        for k, a in tp.items():
            v, n, j = k.split("/")
            c = tp.get(f"crun/{n}/{j}")
            if c and v in ("agentcage", "t2"):
                goal = 1.5 if v == "agentcage" else 1.0
                r = a["cps"] / c["cps"]
                target(f"throughput {'plain' if v == 'agentcage' else 'tier 2'} N={n} J={j} >= {goal}x crun plain",
                       f"{a['cps']:.1f} vs {c['cps']:.1f}/s = {r:.2f}x", r >= goal)
        ns = sorted({int(k.split("/")[1]) for k in tp})
        if len(ns) >= 2:
            for j in sorted({int(k.split("/")[2]) for k in tp}):
                a0, a1 = tp.get(f"agentcage/{ns[0]}/{j}"), tp.get(f"agentcage/{ns[-1]}/{j}")
                c0, c1 = tp.get(f"crun/{ns[0]}/{j}"), tp.get(f"crun/{ns[-1]}/{j}")
                if a0 and a1:
                    r = a1["cps"] / a0["cps"]
                    cr = f", crun {c1['cps'] / c0['cps']:.2f}" if c0 and c1 else ""
                    target(f"flat: agentcage containers/s N={ns[-1]} / N={ns[0]} (J={j}) >= 0.9", f"{r:.2f}{cr}", r >= 0.9)
            a1 = tp.get(f"agentcage/{ns[-1]}/1")
            if a1:
                r = a1["last_fifth_ms"] / a1["first_fifth_ms"]
                target(f"flat: agentcage latency, last / first fifth of N={ns[-1]} (J=1) <= 1.1",
                       f"{a1['last_fifth_ms']:.1f} / {a1['first_fifth_ms']:.1f} ms = {r:.2f}", r <= 1.1)
    if al:
        for v in ("t0", "t1", "t2", "t3"):
            if v in al:
                kib = al[v]["owned_pss_kib_per_ctr"] + al[v]["owned_kernel_kib_per_ctr"]
                target(f"resident per tier-{v[1]} container <= 512 KiB" + ("" if b.tier_active else " (tier mapping not active)"),
                       f"{kib:.0f} KiB PSS + page tables + kernel stack ({al[v]['owned_procs']} processes)", kib <= 512)
        for v in ("t2", "t3"):
            if al.get(v, {}).get("egress_procs"):
                kib = al[v]["egress_pss_kib_per_ctr"] + al[v]["egress_kernel_kib_per_ctr"]
                target(f"egress proxy resident per tier-{v[1]} container <= 1 MiB",
                       f"{kib:.0f} KiB PSS + page tables + kernel stacks ({al[v]['egress_procs']} processes)", kib <= 1024)
    if mn:
        target(f"{mn['n']} tier-2 sleepers all started", f"{mn['started']} in {mn['start_all_s']:.1f} s, "
               f"{mn['mem_available_kib_per_ctr']:.0f} KiB of MemAvailable each", mn["started"] == mn["n"])
        wd, px = mn["kinds"]["watchdog"], mn["kinds"]["proxy"]
        target("watchdog <= 512 KiB RSS", f"{wd['rss_kib_per_proc']:.0f} KiB", wd["rss_kib_per_proc"] <= 512)
        target("egress proxy <= 1 MiB RSS idle (writer + worker, RSS counts shared pages)",
               f"{px['rss_kib_per_ctr']:.0f} KiB RSS, {px['pss_kib_per_ctr'] + px['kernel_kib_per_ctr']:.0f} KiB PSS + kernel",
               px["rss_kib_per_ctr"] <= 1024)
    if sc and "t1" in sc and "agentcage" in sc:
        r = sc["t1"]["getppid_ns"] / sc["agentcage"]["getppid_ns"]
        na = "" if b.tier_active else " (tier mapping not active)"
        target("getppid under tier-1 filter <= 1.05x no filter" + na, f"{r:.2f}x", r <= 1.05)
        # what a filter can reach on this kernel: any filter at all takes
        # every syscall through seccomp's entry path (see docs/tiers.md)
        if "agentcage-minimal" in sc:
            m = sc["t1"]["getppid_ns"] / sc["agentcage-minimal"]["getppid_ns"]
            target("getppid under tier-1 filter <= 1.05x the minimal filter (the floor of any filter)" + na,
                   f"{m:.2f}x (the minimal filter {sc['agentcage-minimal']['getppid_ns'] / sc['agentcage']['getppid_ns']:.2f}x no filter)",
                   m <= 1.05)
    if gv.get("runsc") and gv.get("g1"):
        r = gv["g1"]["run"]["wall_ms"] / gv["runsc"]["run"]["wall_ms"]
        target("tier 1 under gVisor run wall <= 1.05x runsc alone", f"{r:.2f}x", r <= 1.05)
        if gva.get("runsc") and gva.get("g1"):
            m = gva["g1"]["all_pss_kernel_kib_per_ctr"] / max(gva["runsc"]["all_pss_kernel_kib_per_ctr"], 1)
            target("tier 1 under gVisor resident <= 1.05x runsc alone", f"{m:.2f}x", m <= 1.05)
    if b.notes:
        L.append("")
        for n in b.notes:
            L.append(f"Note: {n}")
    if b.failures:
        L.append("")
        L.append(f"Note: {b.failures} measurement batches reported failures (see stderr)")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--stateroot", required=True)
    ap.add_argument("--rootfs", required=True)
    ap.add_argument("--timeit", required=True)
    ap.add_argument("--agentcage", required=True)
    ap.add_argument("--runc", default="/usr/sbin/runc")
    ap.add_argument("--crun", default="/usr/bin/crun")
    ap.add_argument("--runsc", default="/usr/bin/runsc")
    ap.add_argument("--docker-config", default="")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--only", default="1,3,4,5,6,7,8,9", help="sections to run (1 includes 2)")
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--checks", help="append ok/FAIL lines (functional, not the targets) here")
    ap.add_argument("--report", help="write the markdown table here")
    a = ap.parse_args()
    only = set(a.only.split(","))

    b = Bench(a)
    t0 = time.time()
    plain = ["agentcage", "runc", "crun"]
    tiers = ["t0", "t1", "t2", "t3"]
    try:
        if "1" in only:
            b.bench_lifecycle(plain + tiers, rounds=3 if a.quick else 20, per_round=2 if a.quick else 3)
        if "3" in only:
            b.bench_throughput(plain + ["t2"], [20, 50] if a.quick else [100, 500], [1, 2, 8], reps=1 if a.quick else 3)
        if "4" in only:
            b.bench_exec(plain + ["t1", "t3"], rounds=2 if a.quick else 5, per_round=3 if a.quick else 5)
        if "5" in only:
            b.bench_alive(plain + tiers, 10 if a.quick else 100)
        if "6" in only:
            docker = ["runc-docker", "crun-docker", "agentcage-docker", "t1-docker"] if b.docker_seccomp else []
            if not docker:
                b.notes.append("no Docker config.json given: Docker-profile rows skipped")
            b.bench_syscalls(plain + tiers + docker + ["agentcage-minimal"],
                             rounds=1 if a.quick else 7, count=300000 if a.quick else 2000000)
        if "7" in only:
            b.bench_egress(100, rounds=1 if a.quick else 3, per_round=2 if a.quick else 3)
        if "8" in only:
            b.bench_many("t2", 50 if a.quick else 1000, 8)
        if "9" in only and b.runsc:
            gv = ["runsc", "g1", "t1"]
            b.bench_lifecycle(gv, rounds=2 if a.quick else 10, per_round=2 if a.quick else 3, key="gvisor")
            b.bench_alive(gv, 3 if a.quick else 10, key="gvisor_alive")
        elif "9" in only:
            b.notes.append(f"no runsc at {a.runsc}: the gVisor rows (section 9) skipped")
    finally:
        b.cleanup()
    if a.checks:
        with open(a.checks, "a") as f:
            f.write("ok - agentcage, runc and crun each ran /bin/true in the bench namespace\n")
            f.write(("ok" if b.failures == 0 else "FAIL") + f" - every measured batch succeeded ({b.failures} failed)\n")
            for v, s in b.results.get("lifecycle", {}).items():
                ok = s["run"]["n"] > 0 and s["run"]["failed"] == 0 and s["create"]["failed"] == 0
                f.write(("ok" if ok else "FAIL") + f" - {v}: run and create/start/delete measured\n")
            for v, s in b.results.get("alive", {}).items():
                f.write(("ok" if s["started"] > 0 else "FAIL") + f" - {v}: {s['started']} long-running containers\n")
                if v in ("t2", "t3") and b.tier_active:
                    f.write(("ok" if s["egress_procs"] == 2 * s["started"] else "FAIL") +
                            f" - {v}: an egress proxy (writer and worker) per container: {s['egress_procs']} processes\n")
            for v, s in b.results.get("egress", {}).items():
                f.write(("ok" if s["failed"] == 0 else "FAIL") + f" - {v}: {s['size_mib']} MiB downloaded "
                        f"{'through the egress proxy' if v == 't2' else 'directly'}\n")
                f.write(("ok" if s["small_failed"] == 0 and s.get("first_byte_failed", 0) == 0 else "FAIL") +
                        f" - {v}: a one-byte answer fetched {'through the egress proxy' if v == 't2' else 'directly'}\n")
            mn = b.results.get("many")
            if mn:
                f.write(("ok" if mn["started"] == mn["n"] else "FAIL") +
                        f" - {mn['started']} of {mn['n']} tier-2 sleepers started at once\n")
            for v, s in b.results.get("syscalls", {}).items():
                f.write(("ok" if s["n"] > 0 else "FAIL") + f" - {v}: syscall probe ran\n")
            for v, s in b.results.get("gvisor", {}).items():
                ok = s["run"]["n"] > 0 and s["run"]["failed"] == 0 and s["create"]["failed"] == 0
                f.write(("ok" if ok else "FAIL") + f" - gVisor rows, {v}: run and create/start/delete measured\n")
            for v, s in b.results.get("gvisor_alive", {}).items():
                f.write(("ok" if s["started"] > 0 else "FAIL") + f" - gVisor rows, {v}: {s['started']} long-running sandboxes\n")
    text = report(b, a.quick)
    text += f"\n\n(bench time {time.time() - t0:.0f} s)\n"
    print(text)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(b.results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
