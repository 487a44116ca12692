#!/usr/bin/env bash
# tests/run_dist_fault.sh MPIEXEC CAPGNN MODE [EXPECTED_TEXT...]
# Runs `capgnn` on 2 ranks ($NP when set) where rank 1 (the ranks $FAIL_RANK lists when
# set, e.g. 0,1) fails on purpose
# (CAPGNN_TEST_FAIL_RANK, CAPGNN_TEST_FAIL_AT=MODE, see runtime/dist.h):
#   setup  rank 1 cannot open the graph: every rank must leave set-up with exit code 1
#          (agreed error, no abort), and the job prints one error line, rank 1's own
#          (not rank 0's "rank 1 failed during ..." besides)
#   train  a halo exchange of rank 1 returns an error inside the first training step:
#          rank 1 logs it and aborts the job
#   kill   rank 1 SIGKILLs itself inside the first training step
# and checks that the job ends within 30 s with a non-zero exit code that is not the
# hang timeout, and that each EXPECTED_TEXT appears in its output.
set -u
mpiexec=$1 capgnn=$2 mode=$3 rank=${FAIL_RANK:-1} np=${NP:-2}
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
CAPGNN_TEST_FAIL_RANK=$rank CAPGNN_TEST_FAIL_AT=$mode \
  timeout -v -k 5 60 "$mpiexec" -n "$np" --oversubscribe --allow-run-as-root "$capgnn" \
  --graph synth:small --epochs 100 --device cpu --threads 1 --no-part-cache --quiet >"$out" 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out"
echo "run_dist_fault.sh: mode=$mode exit code $rc after ${elapsed_ms} ms"
fail=0
if [ "$rc" -eq 0 ]; then echo "FAIL: the job exited 0 although rank $rank failed"; fail=1; fi
if [ "$rc" -eq 124 ] || grep -q "^timeout: sending signal" "$out"; then
  echo "FAIL: the job hung until the 60 s timeout"; fail=1
fi
if [ "$mode" = setup ] && [ "$rc" -ne 1 ]; then
  echo "FAIL: a failed set-up must end every rank with exit code 1 (got $rc)"; fail=1
fi
if [ "$mode" = setup ] && [ "$(grep -c "capgnn: error" "$out")" -ne 1 ]; then
  echo "FAIL: a failed set-up must print one error line"; fail=1
fi
if [ "$elapsed_ms" -ge 30000 ]; then echo "FAIL: the job took ${elapsed_ms} ms to stop (limit 30000)"; fail=1; fi
for expect in "$@"; do
  if ! grep -q -- "$expect" "$out"; then echo "FAIL: the output does not contain '$expect'"; fail=1; fi
done
[ "$fail" -eq 0 ] && echo "ok: mode $mode stopped the job cleanly"
exit $fail
