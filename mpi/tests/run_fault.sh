#!/usr/bin/env bash
# mpi/tests/run_fault.sh MPIEXEC PROG MODE [EXPECTED_TEXT]
# Runs PROG MODE on 3 ranks (or $FAULT_RANKS), where rank 1 fails on purpose, and
# checks that the whole job ends within 30 s with a non-zero exit code that is not
# the hang timeout (124, or timeout's message after it had to kill), and, when
# given, that EXPECTED_TEXT appears in its output.
set -u
mpiexec=$1 prog=$2 mode=$3 expect=${4:-} np=${FAULT_RANKS:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
timeout -v -k 5 60 "$mpiexec" -n "$np" --oversubscribe --allow-run-as-root "$prog" "$mode" >"$out" 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out"
echo "run_fault.sh: mode=$mode exit code $rc after ${elapsed_ms} ms"
fail=0
if [ "$rc" -eq 0 ]; then echo "FAIL: the job exited 0 although rank 1 failed"; fail=1; fi
# A killed rank makes mpiexec exit 137 itself, so the hang is told apart by
# timeout's own message, not by the exit code alone.
if [ "$rc" -eq 124 ] || grep -q "^timeout: sending signal" "$out"; then
  echo "FAIL: the job hung until the 60 s timeout"; fail=1
fi
if [ "$elapsed_ms" -ge 30000 ]; then echo "FAIL: the job took ${elapsed_ms} ms to stop (limit 30000)"; fail=1; fi
if [ -n "$expect" ] && ! grep -q -- "$expect" "$out"; then
  echo "FAIL: the output does not contain '$expect'"; fail=1
fi
[ "$fail" -eq 0 ] && echo "ok: mode $mode stopped the job cleanly"
exit $fail
