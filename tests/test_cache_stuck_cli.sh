#!/usr/bin/env bash
# tests/test_cache_stuck_cli.sh CAPGNN MPIEXEC OUTDIR — a halo-cache reader waiting for a
# node-tier row that is never written ends the job in bounded time, and the cache says
# which row (not only the stall watchdog, where): 2 ranks on one node, rank 1 leaves out
# its first forward exchange of layer 1 (CAPGNN_TEST_FAIL_AT=skip, runtime/fault.c) and
# goes on. Without CAPGNN_JACA_TIMEOUT the readers' timeout follows --stall-timeout (9 s
# of 10): rank 0's error must name itself, the layer, the epoch, the row's owner and the
# generation it waited for, and come well before a minute.
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
unset CAPGNN_JACA_TIMEOUT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CAPGNN_TEST_FAIL_RANK=1 CAPGNN_TEST_FAIL_AT=skip
fail() { echo "FAIL: $*"; exit 1; }
t0=$(date +%s)
timeout 120 "$mpiexec" --allow-run-as-root --oversubscribe -n 2 -x CAPGNN_TEST_FAIL_RANK -x CAPGNN_TEST_FAIL_AT \
  "$capgnn" --graph synth:small --model gcn --layers 3 --hidden 16 --epochs 3 --device cpu --threads 1 \
  --no-part-cache --layer0-halo local --cache-policy jaca --stall-timeout 10 >run.out 2>run.err
rc=$? t=$(($(date +%s) - t0))
grep -q "rank 1: leaving out the forward exchange of layer 1, epoch 1" run.err ||
  { cat run.err; fail "the fault was not injected"; }
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat run.err; fail "the job exited $rc: expected a reader's timeout error"; }
[ $t -lt 60 ] || fail "the job took $t s to end (the readers' timeout is 9 s)"
want="ERROR rank 0 of 2 failed during training: jaca: node row .*layer 1, owned by rank 1) did not reach"
want="$want generation 1 (epoch 1's exchange) within 9 s (it holds generation 0)"
grep -q "$want" run.err ||
  { cat run.err; fail "no error from the cache naming the rank, the row's owner, layer, epoch and generation"; }
echo "test_cache_stuck_cli: all checks passed (ended in $t s)"
