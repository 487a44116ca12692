#!/usr/bin/env bash
# tests/test_profile_hetero.sh CAPGNN MPIEXEC OUTDIR — CPU ranks with different thread
# counts (--threads 2,1, not bound to one core each) get relative capabilities in the
# order of their thread counts, and each rank's profile records its thread count.
# Timing-based: label `slow`. Prints the figures.
#
# The order holds for ranks that get the cores their threads ask for. A 2-thread rank
# is as fast as its slower thread, so on a 2-core host one busy process of someone else
# takes the advantage away and can invert it. Measured on the development VM (2 cores):
# with other processes taking 10-50 % of the CPU time 5 of 8 runs inverted, with 50 %
# or more 29 of 51; with under 10 % none of 43 (the 2-thread rank's share 0.53-0.73).
# So each attempt also measures the CPU time that other processes took while it ran
# (/proc/stat's busy time, steal included, less this job's own): the order is asserted
# on the first attempt in which they took under 10 % of the machine, the recorded
# threads on every attempt. With no such attempt in 3 the order cannot be measured
# here: skipped (77), each attempt's figures printed.
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export CAPGNN_CACHE=$out/cache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec python3 -u - "$capgnn" "$mpiexec" <<'PY'
import json, os, resource, subprocess, sys
capgnn, mpiexec = sys.argv[1:3]
ATTEMPTS, OTHERS_MAX = 3, 0.10

def cpu_jiffies():  # (busy, all) of /proc/stat's "cpu" line, every CPU together
    v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7], sum(v)  # user nice system irq softirq steal

def own_cpu_s():  # CPU time of the finished children (mpiexec, and the ranks it waited for)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

hz = os.sysconf("SC_CLK_TCK")
for attempt in range(1, ATTEMPTS + 1):
    b0, a0 = cpu_jiffies()
    c0 = own_cpu_s()
    p = subprocess.run([mpiexec, "-n", "2", "--allow-run-as-root", "--bind-to", "none", "--oversubscribe", capgnn,
                        "profile", "--device", "cpu", "--quick", "--threads", "2,1", "--refresh", "--json", "h.json"],
                       stdout=open("h.out", "w"), stderr=subprocess.PIPE, text=True)
    b1, a1 = cpu_jiffies()
    if p.returncode != 0:
        print(f"FAIL: profile exited {p.returncode}\n{p.stderr}")
        sys.exit(1)
    others = max(0.0, ((b1 - b0) / hz - (own_cpu_s() - c0)) / max((a1 - a0) / hz, 1e-9))
    d = json.load(open("h.json"))
    th = [r["device"]["threads"] for r in d["ranks"]]
    rel = d["capability"]["relative"]
    mm = [r["summary"]["mm_gflops"] for r in d["ranks"]]
    sp = [r["summary"]["spmm_gnnz_s"] for r in d["ranks"]]
    print(f"attempt {attempt}: other processes took {others * 100:.1f} % of the CPU time; threads {th}, "
          f"relative capability {[round(x, 3) for x in rel]}, MM GFLOP/s {[round(x, 1) for x in mm]}, "
          f"SpMM G nnz-col/s {[round(x, 2) for x in sp]}")
    assert th == [2, 1], f"threads recorded {th}, expected [2, 1]"
    if others < OTHERS_MAX:
        assert rel[0] > rel[1], f"the 2-thread rank is not the more capable: {rel}"
        print("test_profile_hetero: ok")
        sys.exit(0)
print(f"test_profile_hetero: skipped: other processes took {OTHERS_MAX * 100:.0f} % or more of the CPU time in "
      f"each of {ATTEMPTS} attempts, so the threads' speeds could not be compared (the threads were recorded right)")
sys.exit(77)
PY
