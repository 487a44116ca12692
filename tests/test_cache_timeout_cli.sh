#!/usr/bin/env bash
# tests/test_cache_timeout_cli.sh CAPGNN MPIEXEC OUTDIR — a halo-cache reader that waits
# longer than CAPGNN_JACA_TIMEOUT for a node-tier row says what to do: 2 ranks on one
# node, rank 1 slowed 100x (CAPGNN_EMULATE_SPEED=1,0.01), a timeout of 1 ms, GCN 3 x 64 on
# synth:small (rank 1's layer takes far longer than 1 ms). The job must fail (exit != 0)
# with a message that gives the timeout as set (not rounded to "0 s"), names the row's
# owner rank and names CAPGNN_JACA_TIMEOUT, the knob that makes readers wait longer.
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CAPGNN_JACA_TIMEOUT=0.001 CAPGNN_EMULATE_SPEED=1,0.01
fail() { echo "FAIL: $*"; exit 1; }
timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -n 2 -x CAPGNN_JACA_TIMEOUT -x CAPGNN_EMULATE_SPEED \
  "$capgnn" --graph synth:small --model gcn --layers 3 --hidden 64 --epochs 3 --device cpu --threads 1 \
  --no-part-cache --layer0-halo local --cache-policy jaca >run.out 2>run.err
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat run.err; fail "the job exited $rc: expected a reader's timeout error"; }
grep -q "jaca: node row .*owned by rank [01]) did not reach generation .* within 0.001 s" run.err ||
  { cat run.err; fail "the timeout message does not give the timeout as set or the row's owner"; }
grep -q "did not reach generation .*CAPGNN_JACA_TIMEOUT=SECONDS waits longer" run.err ||
  { cat run.err; fail "the timeout message does not name CAPGNN_JACA_TIMEOUT"; }
echo "test_cache_timeout_cli: all checks passed"
