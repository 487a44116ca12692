#!/usr/bin/env bash
# tests/test_profile_hetero.sh CAPGNN MPIEXEC OUTDIR — CPU ranks with different thread
# counts (--threads 2,1, not bound to one core each) get relative capabilities in the
# order of their thread counts, and each rank's profile records its thread count.
# Timing-based: label `slow` (a busy machine can invert it). Prints the figures.
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export CAPGNN_CACHE=$out/cache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$mpiexec" -n 2 --allow-run-as-root --bind-to none --oversubscribe "$capgnn" profile --device cpu --quick \
  --threads 2,1 --json h.json >h.out 2>h.err || { echo "FAIL: profile exited $?"; cat h.err; exit 1; }
python3 - h.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
th = [r["device"]["threads"] for r in d["ranks"]]
rel = d["capability"]["relative"]
mm = [r["summary"]["mm_gflops"] for r in d["ranks"]]
sp = [r["summary"]["spmm_gnnz_s"] for r in d["ranks"]]
print(f"threads {th}, relative capability {[round(x, 3) for x in rel]}, MM GFLOP/s {[round(x, 1) for x in mm]}, "
      f"SpMM G nnz-col/s {[round(x, 2) for x in sp]}")
assert th == [2, 1], f"threads recorded {th}, expected [2, 1]"
assert rel[0] > rel[1], f"the 2-thread rank is not the more capable: {rel}"
print("test_profile_hetero: ok")
PY
