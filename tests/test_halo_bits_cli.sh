#!/usr/bin/env bash
# tests/test_halo_bits_cli.sh CAPGNN MPIEXEC OUTDIR — coded halo rows (--halo-bits)
# through the `capgnn` binary, 4 ranks on 2 emulated nodes, GCN 3 x 16 on synth:small:
# 1. --halo-bits 32 is the default: the same losses bit for bit as a run without it,
#    and the summary says halo_bits 32.
# 2. --halo-bits 8 and 4 (plain exchange, the exact halo cache, and the cache with stale
#    gradients, whose exchanges are others): every epoch's loss finite and within 2 % of
#    the exact run's (of the exact cache's for the cache); fewer halo bytes every epoch,
#    4 bits fewer than 8; between the smallest and largest modelled ratio of the layer
#    widths' coded row (8 + ceil(w * bits / 8) bytes against 4 w); a second 4-bit run
#    gives the same losses bit for bit (deterministic rounding); the log says
#    APPROXIMATE, the summary names halo_bits and the cache's exact false. (That
#    evaluation stays exact is checked at the exchange: mpi/tests/test_halo_quant.c.)
# 3. Usage errors: --halo-bits 5 (exit 2, naming the widths); --halo-bits with adaptive
#    staleness of rows or of gradients, naming both (exit 2, before any set-up; also
#    the 4 bits --cache-preset fast sets). --print-config shows it.
# 4. --cache-preset fast resolves to --cache-policy jaca --staleness 3 --grad-staleness 3
#    --halo-bits 4, each overridden by an explicit option; exact to the cache's exact
#    defaults; another name is a usage error.
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CAPGNN_EMULATE_NODES=2
fail() { echo "FAIL: $*"; exit 1; }
run() { # name, extra options
  local name=$1; shift
  "$mpiexec" --allow-run-as-root --oversubscribe -n 4 -x CAPGNN_EMULATE_NODES "$capgnn" --graph synth:small \
    --model gcn --layers 3 --hidden 16 --epochs 4 --device cpu --threads 1 --no-part-cache \
    --metrics "$name.jsonl" "$@" >"$name.out" 2>"$name.err" || { cat "$name.err"; fail "$name exited $?"; }
}
run exact
run b32 --halo-bits 32
run b8 --halo-bits 8
run b4 --halo-bits 4
run b4again --halo-bits 4
run cache --cache-policy jaca
run cache_b4 --cache-policy jaca --halo-bits 4
run cache_g2_b4 --cache-policy jaca --grad-staleness 2 --halo-bits 4
for n in b8 b4 cache_b4; do
  grep -q "APPROXIMATE: training steps send halo rows and gradients through MPI as ${n##*b}-bit codes" $n.err ||
    { cat $n.err; fail "$n: the approximation is not logged"; }
done
grep -q "APPROXIMATE: training steps send" exact.err && fail "the exact run logs an approximation"
python3 - <<'PY' || fail "metrics"
import json, math
def load(n):
    L = [json.loads(l) for l in open(n + ".jsonl")]
    ep = [d for d in L if not d.get("summary")]
    return ep, [d for d in L if d.get("summary")][0]
ex, exs = load("exact")
b32, b32s = load("b32")
assert [d["loss"] for d in ex] == [d["loss"] for d in b32], "--halo-bits 32 changed the losses"
assert [d["loss"] for d in load("b4")[0]] == [d["loss"] for d in load("b4again")[0]], "two 4-bit runs differ"
g2 = load("cache_g2_b4")
assert g2[1]["halo_bits"] == 4 and g2[1]["cache"]["exact"] is False
for a, b in zip(load("cache")[0], g2[0]):
    assert math.isfinite(b["loss"]) and abs(b["loss"] - a["loss"]) <= 0.02 * abs(a["loss"]), ("g2", a["loss"], b["loss"])
    assert b["halo_bytes"] < a["halo_bytes"], ("g2 bytes", b["epoch"], b["halo_bytes"], a["halo_bytes"])
assert exs["halo_bits"] == 32 and b32s["halo_bits"] == 32, (exs["halo_bits"], b32s["halo_bits"])
widths = [16, 8]  # what synth:small's GCN 3 x 16 exchanges: layer 0's and 1's X·W (16), layer 2's (8 classes)
def ratio(w, bits): return (8 + math.ceil(w * bits / 8)) / (4 * w)
for base, names in (("exact", ("b8", "b4")), ("cache", ("cache_b4",))):
    be, bs = load(base)
    prev = None
    for n in names:
        e, s = load(n)
        bits = int(n.rsplit("b", 1)[1])
        assert s["halo_bits"] == bits, (n, s["halo_bits"])
        lo, hi = min(ratio(w, bits) for w in widths), max(ratio(w, bits) for w in widths)
        for a, b in zip(be, e):
            assert math.isfinite(b["loss"]) and abs(b["loss"] - a["loss"]) <= 0.02 * abs(a["loss"]), (n, a["loss"], b["loss"])
            r = b["halo_bytes"] / a["halo_bytes"]
            assert lo - 1e-9 <= r <= hi + 1e-9, (n, b["epoch"], r, lo, hi)
        if prev:
            assert sum(d["halo_bytes"] for d in e) < sum(d["halo_bytes"] for d in prev), (n, "not fewer than 8 bits")
        prev = e
        if "cache" in s:
            assert s["cache"]["exact"] is False, (n, s["cache"])
_, cs = load("cache")
assert cs["cache"]["exact"] is True
print("metrics ok")
PY
"$capgnn" --halo-bits 5 --graph synth:tiny >u.out 2>u.err; rc=$?
[ $rc = 2 ] || fail "--halo-bits 5 exited $rc"
grep -q "expected 32 (exact), 16, 8 or 4" u.err || { cat u.err; fail "no message naming the widths"; }
"$mpiexec" --allow-run-as-root --oversubscribe -n 4 -x CAPGNN_EMULATE_NODES "$capgnn" --graph synth:small --epochs 2 \
  --device cpu --threads 1 --no-part-cache --cache-policy jaca --staleness adaptive:0.1:3 --halo-bits 8 >a.out 2>a.err
rc=$?
[ $rc = 2 ] || { cat a.err; fail "adaptive staleness with --halo-bits exited $rc"; }
grep -q -- "--staleness adaptive sends full-precision rows, so it cannot take --halo-bits" a.err ||
  { cat a.err; fail "no message naming both"; }
[ "$(grep -c "error:" a.err)" = 1 ] || { cat a.err; fail "the usage error was not said once for the job"; }
"$mpiexec" --allow-run-as-root --oversubscribe -n 4 -x CAPGNN_EMULATE_NODES "$capgnn" --graph synth:small --epochs 2 \
  --device cpu --threads 1 --no-part-cache --cache-policy jaca --grad-staleness adaptive:0.1:3 --halo-bits 8 >ga.out 2>ga.err
rc=$?
[ $rc = 2 ] || { cat ga.err; fail "adaptive gradients with --halo-bits exited $rc"; }
grep -q -- "--grad-staleness adaptive sends full-precision gradients, so it cannot take --halo-bits" ga.err ||
  { cat ga.err; fail "no message naming both (gradients)"; }
"$capgnn" --cache-preset fast --staleness adaptive --print-config >pa.out 2>pa.err && fail "preset fast + adaptive ran"
grep -q -- "cannot take --cache-preset fast's --halo-bits" pa.err || { cat pa.err; fail "no message naming the preset"; }
"$capgnn" --halo-bits 4 --print-config | grep -q "^halo-bits = 4$" || fail "--print-config lacks halo-bits"
pc() { "$capgnn" "$@" --print-config | grep -E "^(cache-policy|staleness|grad-staleness|halo-bits) = " | tr '\n' ' '; }
got=$(pc --cache-preset fast)
[ "$got" = "cache-policy = jaca staleness = 3 grad-staleness = 3 halo-bits = 4 " ] || fail "preset fast: $got"
got=$(pc --cache-preset fast --staleness 1 --cache-policy lru --halo-bits 8)
[ "$got" = "cache-policy = lru staleness = 1 grad-staleness = 3 halo-bits = 8 " ] || fail "preset fast overridden: $got"
got=$(pc --halo-bits 4 --grad-staleness 2 --cache-preset exact)
[ "$got" = "cache-policy = jaca staleness = 0 grad-staleness = 2 halo-bits = 4 " ] || fail "preset exact: $got"
"$capgnn" --cache-preset slow --graph synth:tiny >p.out 2>p.err; rc=$?
[ $rc = 2 ] && grep -q "expected exact or fast" p.err || { cat p.err; fail "--cache-preset slow exited $rc"; }
echo "test_halo_bits_cli: ok"
