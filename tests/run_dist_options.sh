#!/usr/bin/env bash
# tests/run_dist_options.sh MPIEXEC CAPGNN — the exactness contract through `capgnn` for the
# training options that the P-rank tests (test_dist_equiv: GCN/SAGE/GAT, Adam, 2-3 layers,
# single-label) leave out, each against one process with the same options: per-epoch
# loss within 1e-5 relative, per-epoch train/val/test accuracy equal, the final weights
# (from the checkpoint) within 1e-4 + 1e-4 |w|, and where early stopping runs the same
# epochs, outcome and best epoch.
# A. multi-label (binary cross-entropy, micro-F1) GraphSAGE 3 layers with LayerNorm,
#    --reorder cluster (the summary: applied on every rank), SGD with momentum, a step
#    schedule with warm-up and --wd-scope first, on 3 ranks; and the same run written as a checkpoint after 4 epochs on 2 ranks
#    and resumed on 3 to epoch 8.
# B. one layer (GAT, 2 averaged output heads), AdamW and a cosine schedule, on 2 ranks.
# C. --seeds 1,2 with --early-stop 2 --eval-every 2 and --save-best, on 2 ranks: every
#    seed's records, outcome and best epoch, and each seed's checkpoint and best weights.
# Exit 77 (skipped) without mpiexec.
set -u
mpiexec=$1 capgnn=$2
command -v "$mpiexec" >/dev/null 2>&1 || { echo "skipped: no mpiexec ($mpiexec)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail=0
common=(--device cpu --threads 1 --quiet --no-part-cache)
# run NAME P OPTIONS...: P = 1 is one plain process
run() {
  local name=$1 P=$2; shift 2
  local pre=(); [ "$P" -gt 1 ] && pre=("$mpiexec" --oversubscribe --allow-run-as-root -n "$P")
  timeout -k 5 120 "${pre[@]}" "$capgnn" "${common[@]}" "$@" --metrics "$name.jsonl" >"$name.log" 2>&1 ||
    { local rc=$?; cat "$name.log"; echo "FAIL: $name (P = $P) exited $rc"; fail=1; }
}
# same REF DIST CKPT_REF CKPT_DIST: the contract's comparison (python3, as the other CLI tests)
same() {
  python3 - "$@" <<'PY' || { echo "FAIL: $1 against $2"; fail=1; }
import json, struct, sys
def records(p):
    ep, summ = {}, {}
    for line in open(p):
        o = json.loads(line)
        if o.get("aggregate"): continue
        if o.get("summary"): summ[o.get("seed")] = o; continue
        ep[(o.get("seed"), o["epoch"])] = o  # a resumed run's record of an epoch wins
    return ep, summ
def params(p):
    b = open(p, "rb").read()
    h = struct.unpack_from("<Q", b, 16)[0]
    n = json.loads(b[24:24 + h])["params"]
    return struct.unpack_from("<%df" % n, b, 24 + h)
(re, rs), (de, ds) = records(sys.argv[1]), records(sys.argv[2])
bad = []
if sorted(re) != sorted(de): bad.append("epochs %s / %s" % (sorted(re)[-1:], sorted(de)[-1:]))
worst = 0.0
for k in sorted(set(re) & set(de)):
    a, b = re[k]["loss"], de[k]["loss"]
    worst = max(worst, abs(a - b) / abs(a))
    for f in ("train_acc", "val_acc", "test_acc"):
        if re[k][f] != de[k][f]: bad.append("%s %s: %s / %s" % (k, f, re[k][f], de[k][f]))
if worst > 1e-5: bad.append("loss rel err %.3g" % worst)
# the P-rank run ran on P ranks (P singletons of a launcher of another MPI would train
# what one process trains, and match it)
if not ds or any(d.get("ranks", 1) < 2 for d in ds.values()): bad.append("%s: not a run of several ranks" % sys.argv[2])
for s in rs:
    for f in ("epochs", "outcome", "best_epoch"):
        if s in ds and rs[s].get(f) != ds[s].get(f): bad.append("seed %s %s: %s / %s" % (s, f, rs[s].get(f), ds[s].get(f)))
wr = 0.0
for ca, cb in zip(sys.argv[3::2], sys.argv[4::2]):
    pa, pb = params(ca), params(cb)
    if len(pa) != len(pb): bad.append("%s: %d / %d parameters" % (cb, len(pa), len(pb))); continue
    wr = max([wr] + [abs(x - y) / (1e-4 + 1e-4 * abs(x)) for x, y in zip(pa, pb)])
if wr > 1: bad.append("weights %.3g x the tolerance" % wr)
print("%s vs %s: loss rel err %.2e, weights %.3f of the tolerance%s" % (sys.argv[1], sys.argv[2], worst, wr,
      "; " + "; ".join(bad[:5]) if bad else ""))
sys.exit(1 if bad else 0)
PY
}

A=(--graph synth:small:multilabel=1 --model sage --layers 3 --layernorm --reorder cluster --optimizer sgd
   --momentum 0.9 --lr 0.2 --lr-schedule step --lr-step-size 3 --lr-warmup 2 --wd-scope first)
run a1 1 "${A[@]}" --epochs 8 --checkpoint a1.ckpt
run a3 3 "${A[@]}" --epochs 8 --checkpoint a3.ckpt
same a1.jsonl a3.jsonl a1.ckpt a3.ckpt
# the summary says what --reorder applied, gathered over the ranks
python3 - a1.jsonl a3.jsonl <<'PY' || { echo "FAIL: the summaries' reorder_applied / reorder_ranks"; fail=1; }
import json, sys
for f, ranks in zip(sys.argv[1:3], (1, 3)):
    s = [json.loads(l) for l in open(f)][-1]
    assert s["summary"] and (s["reorder"], s["reorder_applied"], s["reorder_ranks"]) == ("cluster", "cluster", ranks), \
        (f, s.get("reorder"), s.get("reorder_applied"), s.get("reorder_ranks"))
PY
run ar 2 "${A[@]}" --epochs 4 --checkpoint ar.ckpt
run ar 3 "${A[@]}" --epochs 8 --checkpoint ar.ckpt --resume ar.ckpt
same a1.jsonl ar.jsonl a1.ckpt ar.ckpt
grep -q "made on 2 ranks, this run has 3" ar.log || { cat ar.log; echo "FAIL: no word of the other rank count"; fail=1; }

B=(--graph synth:small --model gat --layers 1 --out-heads 2 --optimizer adamw --lr-schedule cosine --epochs 6)
run b1 1 "${B[@]}" --checkpoint b1.ckpt
run b2 2 "${B[@]}" --checkpoint b2.ckpt
same b1.jsonl b2.jsonl b1.ckpt b2.ckpt

C=(--graph synth:small --lr 0.1 --epochs 30 --early-stop 2 --eval-every 2 --seeds 1,2)
run c1 1 "${C[@]}" --checkpoint c1.ckpt --save-best c1b.ckpt
run c2 2 "${C[@]}" --checkpoint c2.ckpt --save-best c2b.ckpt
same c1.jsonl c2.jsonl c1.ckpt.seed1 c2.ckpt.seed1 c1.ckpt.seed2 c2.ckpt.seed2 c1b.ckpt.seed1 c2b.ckpt.seed1 \
  c1b.ckpt.seed2 c2b.ckpt.seed2
grep -q '"outcome":"early_stopped"' c1.jsonl || { echo "FAIL: case C never stopped early (nothing compared)"; fail=1; }
exit $fail
