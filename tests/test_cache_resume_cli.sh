#!/usr/bin/env bash
# tests/test_cache_resume_cli.sh CAPGNN MPIEXEC OUTDIR — --resume with the halo cache,
# 2 ranks, GCN 3 x 16 on synth:small, 6 epochs = 3 + 3:
# 1. The exact cache (--staleness 0): the resumed run's losses are bit for bit those of
#    the uninterrupted run, and it warns about nothing of the cache.
# 2. --staleness 2 --grad-staleness 2: the rows and gradients the cache keeps between
#    steps are not in the checkpoint, so the resumed run sends them all afresh at its
#    first step and continues like, not as, the uninterrupted run: it must say so (a
#    warning naming --resume and both options) instead of letting --resume's "bit for
#    bit" stand. Only --staleness: the warning names the rows alone.
# 3. A checkpoint taken within --cache-warmup (the tiers never used): no warning.
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
run() { # name, extra options
  local name=$1; shift
  "$mpiexec" --allow-run-as-root --oversubscribe -n 2 "$capgnn" --graph synth:small --model gcn --layers 3 \
    --hidden 16 --device cpu --threads 1 --no-part-cache --layer0-halo local --cache-policy jaca "$@" \
    >"$name.out" 2>"$name.err" || { local rc=$?; cat "$name.err"; fail "$name exited $rc"; }
}
losses() { python3 -c "
import json, sys
print([d['loss'] for d in map(json.loads, open(sys.argv[1])) if not d.get('summary')])" "$1"; }

# 1. exact
run exact_full --epochs 6 --metrics exact_full.jsonl
run exact_a --epochs 3 --checkpoint exact.ckpt --metrics exact_part.jsonl
run exact_b --epochs 6 --checkpoint exact.ckpt --resume exact.ckpt --metrics exact_part.jsonl
[ "$(losses exact_full.jsonl)" = "$(losses exact_part.jsonl)" ] ||
  fail "exact cache: resumed losses $(losses exact_part.jsonl) differ from $(losses exact_full.jsonl)"
grep -q "halo cache's kept" exact_b.err && { cat exact_b.err; fail "the exact cache warns on resume"; }

# 2. stale rows and gradients; stale rows only
run stale_a --epochs 3 --staleness 2 --grad-staleness 2 --checkpoint stale.ckpt
run stale_b --epochs 6 --staleness 2 --grad-staleness 2 --checkpoint stale.ckpt --resume stale.ckpt
grep -q "WARN --resume stale.ckpt: the halo cache's kept rows and gradients (--staleness, --grad-staleness) are not in the checkpoint" stale_b.err ||
  { cat stale_b.err; fail "--resume with --staleness 2 --grad-staleness 2 does not warn that it is not bit for bit"; }
[ "$(grep -c "halo cache's kept" stale_b.err)" = 1 ] || { cat stale_b.err; fail "the warning is not printed once"; }
run rows_a --epochs 3 --staleness 2 --checkpoint rows.ckpt
run rows_b --epochs 6 --staleness 2 --checkpoint rows.ckpt --resume rows.ckpt
grep -q "the halo cache's kept rows (--staleness) are not in the checkpoint" rows_b.err ||
  { cat rows_b.err; fail "--resume with --staleness 2 does not warn"; }

# 3. checkpoint within the warm-up
run warm_a --epochs 3 --staleness 2 --cache-warmup 3 --checkpoint warm.ckpt
run warm_b --epochs 6 --staleness 2 --cache-warmup 3 --checkpoint warm.ckpt --resume warm.ckpt
grep -q "halo cache's kept" warm_b.err && { cat warm_b.err; fail "warns although the checkpoint is within the warm-up"; }
echo "test_cache_resume_cli: all checks passed"
