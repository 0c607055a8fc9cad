#!/usr/bin/env python3
"""Interleaved A/B runs of one bench scenario with two server builds.

    bench/ab.py [--full] [--pin] PAIRS A_BIN B_BIN [SCENARIO] [-- herald bench flags...]

Runs `bin/herald bench --scenario SCENARIO [--quick] --server-bin A_BIN`, then the same with
B_BIN, PAIRS times, B first in every other pair, so that a drift of the machine's speed falls on
both builds alike. The harness is this checkout's bin/herald (make build), or HERALD_BENCH_BIN.
Prints each run (accepted/s, jobs completed/s and server CPU per job where the scenario reports
them, peak RSS), then each build's medians and the median of the pairs' CPU ratios (B/A).
SCENARIO defaults to publish; --full runs the full scenario instead of --quick.

--pin runs each server on the machine's last CPU alone and the harness, with the simulator and the
load generator it runs, on the others (`taskset`, util-linux). Unpinned, the three share every
core, so that on a small machine the jobs a build completes per second are bound by the sum of
their CPU, and a cut in the server's CPU shows in them diluted by the simulator's and the load
generator's share; pinned, the server's core is what bounds them, and they follow its CPU per job.

    bench/ab.py --figures FILE [SCENARIO]

prints "jobs-completed/s server-CPU-µs/job" of SCENARIO's run in a `herald bench --out` FILE
(bench/postgres.sh reads its pairs so).
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def figures(path, scenario):
    """The run of scenario in a `herald bench --out` file: ops/s, peak RSS, and the jobs completed
    per second and server CPU per job its notes give (None where they give none)."""
    with open(path) as f:
        r = [x for x in json.load(f)["results"] if x["scenario"].startswith(scenario)][0]
    notes = r.get("notes", "")
    cpu = re.search(r"server CPU (\d+) µs per job", notes)
    done = re.search(r"jobs completed (\d+)/s", notes)
    return {"ops": r["throughput_per_s"], "rss": r["server_peak_rss_mb"],
            "cpu": int(cpu.group(1)) if cpu else None, "completed": int(done.group(1)) if done else None}


def main(argv):
    if argv and argv[0] == "--figures":
        run = figures(argv[1], argv[2] if len(argv) > 2 else "publish")
        print(run["completed"], run["cpu"])
        return
    full, pin = "--full" in argv, "--pin" in argv
    argv = [a for a in argv if a not in ("--full", "--pin")]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    if len(argv) < 3:
        sys.exit(__doc__)
    pairs, builds = int(argv[0]), {"A": argv[1], "B": argv[2]}
    scenario = argv[3] if len(argv) > 3 else "publish"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    harness = os.environ.get("HERALD_BENCH_BIN", os.path.join(root, "bin", "herald"))
    runs = {"A": [], "B": []}
    out_dir = tempfile.mkdtemp(prefix="herald-ab-")
    names, prefix = dict(builds), []
    if pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            sys.exit("--pin needs at least two CPUs")
        server_cpu, others = cpus[-1], ",".join(str(c) for c in cpus[:-1])
        prefix = ["taskset", "-c", others]
        for which in ("A", "B"):
            wrapper = os.path.join(out_dir, f"server-{which}")
            with open(wrapper, "w") as f:
                f.write(f'#!/bin/sh\nexec taskset -c {server_cpu} "{os.path.abspath(builds[which])}" "$@"\n')
            os.chmod(wrapper, 0o755)
            builds[which] = wrapper
    for i in range(pairs):
        for which in ("A", "B") if i % 2 == 0 else ("B", "A"):
            out = os.path.join(out_dir, f"{which}-{i}.json")
            cmd = prefix + [harness, "bench", "--scenario", scenario, "--out", out, "--server-bin", builds[which]]
            if not full:
                cmd.append("--quick")
            started = time.strftime("%H:%M:%S")
            subprocess.run(cmd + extra, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            run = figures(out, scenario)
            runs[which].append(run)
            print(started, which, i + 1, f"ops/s {run['ops']:.0f}", f"completed/s {run['completed']}",
                  f"server CPU µs/job {run['cpu']}", f"peak RSS MB {run['rss']:.0f}", flush=True)
    for which in ("A", "B"):
        rs = runs[which]
        line = [which, names[which], f"median ops/s {statistics.median(r['ops'] for r in rs):.0f}"]
        for key in ("completed", "cpu"):
            vals = [r[key] for r in rs if r[key] is not None]
            if vals:
                line.append(f"median {key} {statistics.median(vals):.0f} of {vals}")
        print(*line)
    for key, name in (("cpu", "server CPU per job"), ("completed", "jobs completed per second")):
        ratios = [b[key] / a[key] for a, b in zip(runs["A"], runs["B"]) if a[key] and b[key]]
        if ratios:
            print(f"{name} B/A by pair {[round(x, 2) for x in ratios]}, median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
