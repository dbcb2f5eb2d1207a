#!/usr/bin/env python3
"""Interleaved A/B of two agentcage binaries: what one step of issue 20 buys.

    integration/bench/ab.py [--mode run|exec|csd] [--tier N] [--rounds R] [--per K] A B

Every round runs K commands of A, then K of B (the order flips each round),
each timed by timeit (fork/exec/wait4, no shell), so the host's drift of the
hour hits both alike; the medians over all rounds and B's ratio to A are
printed. Modes: `run` of /bin/true; `exec` of /bin/true into a running
container (one per binary); `csd`: create, start and delete --force as one
sample. --tier N adds --default-tier N. Each binary finds its helpers
beside itself (agentcage-watchdog), as in a build tree: build the other
tree elsewhere (`git worktree add /tmp/base HEAD~1 && make -C /tmp/base
binaries`).

Runs as root, in a private mount namespace without /sys/fs/cgroup/unified
(as run.sh does: Debian's crun makes no cgroup on hybrid hosts, and the comparison
with the bench stays the same); state under /run/agentcage-ab-PID, cgroups
under /agentcage-bench/ab-PID-*, all removed at the end.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def in_private_namespace():
    """Re-run this script in the bench's mount namespace, once."""
    if os.environ.get("AGENTCAGE_AB_NS") == "1":
        return
    env = dict(os.environ, AGENTCAGE_AB_NS="1")
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"', "sh", sys.executable] + sys.argv
    sys.exit(subprocess.run(argv, env=env).returncode)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=["run", "exec", "csd"], default="run")
    p.add_argument("--tier", type=int)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--per", type=int, default=10)
    p.add_argument("a")
    p.add_argument("b")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("ab.py: must run as root")
    bins = [os.path.realpath(a.a), os.path.realpath(a.b)]
    for b in bins:
        if not os.access(b, os.X_OK):
            sys.exit(f"ab.py: no binary at {b}")
    in_private_namespace()

    rootfs = subprocess.run([os.path.join(TOP, "integration/rootfs.sh")], capture_output=True, text=True,
                            check=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="agentcage-ab.")
    tag = f"ab{os.getpid()}"
    roots = [f"/run/agentcage-{tag}-{k}" for k in range(2)]
    timeit = os.path.join(work, "timeit")
    subprocess.run(["gcc", "-O2", "-o", timeit, os.path.join(HERE, "timeit.c")], check=True)
    spec_dir = os.path.join(work, "spec")
    os.makedirs(spec_dir)
    subprocess.run([bins[0], "spec"], cwd=spec_dir, check=True)
    with open(os.path.join(spec_dir, "config.json")) as f:
        base = json.load(f)
    base["process"]["terminal"] = False
    base["root"] = {"path": rootfs, "readonly": True}
    base["ociVersion"] = "1.0.2-dev"

    def bundle(name, args):
        c = json.loads(json.dumps(base))
        c["process"]["args"] = args
        c["linux"]["cgroupsPath"] = f"/agentcage-bench/{tag}-{name}"
        d = os.path.join(work, name)
        os.makedirs(d)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        return d

    tier = ["--default-tier", str(a.tier)] if a.tier is not None else []
    samples = [{"wall": [], "cpu": []} for _ in bins]
    try:
        true_bundles = [bundle(f"true{k}", ["/bin/true"]) for k in range(2)]
        if a.mode == "exec":
            for k, b in enumerate(bins):
                d = bundle(f"sleep{k}", ["/bin/sleep", "1000000"])
                subprocess.run([b, "--root", roots[k]] + tier + ["run", "-d", "--bundle", d, f"{tag}-x"], check=True,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for r in range(a.rounds):
            for k in ([0, 1] if r % 2 == 0 else [1, 0]):
                cmd = [bins[k], "--root", roots[k]]
                cid = f"{tag}-{k}-{r}-%i"
                if a.mode == "exec":
                    steps = [cmd + ["exec", f"{tag}-x", "/bin/true"]]
                elif a.mode == "csd":
                    steps = [cmd + tier + ["create", "--bundle", true_bundles[k], cid], cmd + ["start", cid],
                             cmd + ["delete", "--force", cid]]
                else:
                    steps = [cmd + tier + ["run", "--bundle", true_bundles[k], cid]]
                argv = [timeit, "-n", str(a.per), "-s", "--"]
                for i, s in enumerate(steps):
                    argv += (["---"] if i else []) + s
                with open(os.path.join(work, "timeit.err"), "w") as err:
                    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, text=True).stdout
                per_iter = {}
                for line in out.splitlines():
                    f = line.split()
                    if f[0] != "step":
                        continue
                    d = dict(zip(f[::2], f[1::2]))
                    if d["status"] != "0":
                        sys.exit(f"ab.py: {bins[k]} failed (status {d['status']}): {open(err.name).read()[:300]}")
                    w, c = per_iter.get(d["iter"], (0, 0))
                    per_iter[d["iter"]] = (w + int(d["wall_ns"]), c + int(d["cpu_ns"]))
                samples[k]["wall"] += [w / 1e6 for w, _ in per_iter.values()]
                samples[k]["cpu"] += [c / 1e6 for _, c in per_iter.values()]
    finally:
        # every container left (the exec mode's, or one a failed step left
        # created), then the state roots
        for k, b in enumerate(bins):
            left = subprocess.run([b, "--root", roots[k], "list", "-q"], capture_output=True, text=True).stdout
            for cid in left.split():
                subprocess.run([b, "--root", roots[k], "delete", "--force", cid],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(roots[k], ignore_errors=True)
        for h in os.listdir("/sys/fs/cgroup"):
            parent = os.path.join("/sys/fs/cgroup", h, "agentcage-bench")
            if os.path.isdir(parent):
                for d in os.listdir(parent):
                    if d.startswith(tag + "-"):
                        try:
                            os.rmdir(os.path.join(parent, d))
                        except OSError:
                            pass
                try:
                    os.rmdir(parent)
                except OSError:
                    pass
        shutil.rmtree(work, ignore_errors=True)
    what = a.mode + (f" at tier {a.tier}" if a.tier is not None else "")
    print(f"# ab.py pid {os.getpid()}")
    print(f"{what}: {a.rounds} rounds of {a.per}, interleaved")
    med = [(statistics.median(s["wall"]), statistics.median(s["cpu"])) for s in samples]
    for k, b in enumerate(bins):
        print(f"  {'AB'[k]} {b}: wall {med[k][0]:.3f} ms, CPU {med[k][1]:.3f} ms (n={len(samples[k]['wall'])})")
    print(f"  B/A: wall {med[1][0] / med[0][0]:.3f}, CPU {med[1][1] / med[0][1]:.3f}")


if __name__ == "__main__":
    main()
