#!/usr/bin/env bash
# tests/run_disk_full.sh CAPGNN — outputs on a full disk (a 12 KiB tmpfs):
#  1. the metrics file fills up mid-run: training goes on and completes (exit 0), with a
#     warning; the file keeps the complete records written before (each line JSON, the
#     epochs 1..k in order, no partial line), no temporary is left;
#  2. the final checkpoint does not fit: the run fails (exit 1) naming the checkpoint,
#     but its metrics file (elsewhere) still ends with the summary of the completed run,
#     and --save-best is written;
#  3. (with MPIEXEC) the same on 2 ranks: every rank agrees on the failure, so the job
#     ends cleanly with exit 1 and the summary, not through MPI_Abort.
# Needs a tmpfs mount (root, a mount namespace that allows it): 77 (skipped) otherwise.
set -u
capgnn=$1 mpiexec=${2:-}
. "$(dirname "$0")/small_tmpfs.sh"
small_tmpfs 12k
full=$mnt
fail=0
train=(--graph synth:tiny --device cpu --threads 1 --no-part-cache --log-every 1000)
# 1. metrics on the full disk
timeout 120 "$capgnn" "${train[@]}" --epochs 60 --metrics "$full/m.jsonl" >"$dir/m.log" 2>&1
rc=$?
python3 - "$full/m.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", "the file does not end with a complete line"
recs = [json.loads(l) for l in lines[:-1]]
assert recs, "no record kept"
assert [r["epoch"] for r in recs] == list(range(1, len(recs) + 1)), "epochs not 1..k"
assert len(recs) < 60, "everything fitted: the disk was not full"
print(f"kept epochs 1..{len(recs)} of 60")
PY
kept=$?
if [ $rc -ne 0 ] || [ $kept -ne 0 ] || ! grep -q "cannot write metrics file" "$dir/m.log" ||
   ! grep -q "done: best val" "$dir/m.log" || ls "$full"/m.jsonl.tmp.* >/dev/null 2>&1; then
  echo "FAIL: a full metrics disk should keep the complete records and let training finish (exit $rc):"
  cat "$dir/m.log"; ls -la "$full"; fail=1
else
  echo "ok: metrics on a full disk: exit 0, $(grep -m1 'incomplete' "$dir/m.log")"
fi
rm -f "$full"/*
# 2. the final checkpoint does not fit (12 KiB), the metrics and best weights go elsewhere
timeout 120 "$capgnn" "${train[@]}" --epochs 5 --hidden 512 --checkpoint "$full/c.ckpt" \
  --metrics "$dir/c.jsonl" --save-best "$dir/best.ckpt" >"$dir/c.log" 2>&1
rc=$?
last=$(tail -n 1 "$dir/c.jsonl" 2>/dev/null)
if [ $rc -ne 1 ] || ! grep -q "c.ckpt" "$dir/c.log" || [ "${last#\{\"summary\":true}" = "$last" ] ||
   ! echo "$last" | grep -q '"outcome":"completed"' || [ ! -s "$dir/best.ckpt" ]; then
  echo "FAIL: a final checkpoint that does not fit: expected exit 1 naming it, the metrics' summary and the" \
       "best weights (exit $rc):"; cat "$dir/c.log"; echo "last record: $last"; fail=1
else
  echo "ok: the final checkpoint on a full disk: exit 1, summary and best weights written"
fi
# 3. on 2 ranks
if [ -n "$mpiexec" ]; then
  rm -f "$full"/* "$dir/c.jsonl"
  timeout 120 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root "$capgnn" "${train[@]}" --epochs 5 --hidden 512 \
    --checkpoint "$full/c.ckpt" --metrics "$dir/c.jsonl" >"$dir/p.log" 2>&1
  rc=$?
  last=$(tail -n 1 "$dir/c.jsonl" 2>/dev/null)
  if [ $rc -ne 1 ] || grep -q "MPI_ABORT" "$dir/p.log" || [ "${last#\{\"summary\":true}" = "$last" ]; then
    echo "FAIL: 2 ranks, a final checkpoint that does not fit: expected exit 1 without MPI_Abort and the summary" \
         "(exit $rc):"; cat "$dir/p.log"; echo "last record: $last"; fail=1
  else
    echo "ok: 2 ranks, the final checkpoint on a full disk: exit 1, no abort, summary written"
  fi
fi
exit $fail
