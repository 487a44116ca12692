#!/usr/bin/env bash
# The PyTorch peers of the benchmark (benchmarks/torch_gcn.py) compute what the plain
# peer computes: one step's gradients of the tuned peer (transpose built once) and, when
# torch_geometric is installed, of PyG's layers equal the plain autograd ones (relative
# 1e-4), for GCN and GraphSAGE on cora, on the CPU; and a short run learns. With CAPGNN:
# capgnn and the peer train the same model: from one capgnn checkpoint (epoch 1, dropout
# 0), capgnn --resume and benchmarks/torch_resume.py (PyTorch, the same weights and Adam
# state) give the same losses for 10 epochs (relative 1e-5), GCN and GraphSAGE.
# Skipped (77) without cora or without a Python that imports torch: the product never
# needs Python, the benchmark's peers do. CAPGNN_TORCH_PYTHON names that Python
# (default python3).
# usage: test_torch_peer.sh SCRIPT DATASETS_DIR [CAPGNN]
set -euo pipefail
script=$1
data=$2
capgnn=${3:-}
py=${CAPGNN_TORCH_PYTHON:-python3}
[ -f "$data/cora.cgr" ] || { echo "skipped: $data/cora.cgr is absent"; exit 77; }
"$py" -c 'import torch' 2>/dev/null || { echo "skipped: $py cannot import torch"; exit 77; }
peers="tuned"
"$py" -c 'import torch_geometric' 2>/dev/null && peers="tuned pyg"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for model in gcn sage; do
  for peer in $peers; do
    "$py" "$script" --graph "$data/cora.cgr" --device cpu --threads 1 --model "$model" --peer "$peer" \
      --layers 2 --hidden 16 --epochs 30 --check-grads --json "$out/r.json" > "$out/log" 2>&1 ||
      { cat "$out/log"; echo "FAIL: $model $peer"; exit 1; }
    "$py" - "$out/r.json" "$model" "$peer" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
model, peer = sys.argv[2], sys.argv[3]
assert r["grad_check_rel"] is not None and r["grad_check_rel"] <= 1e-4, r
# 30 epochs of a 2-layer model on cora: far above chance (7 classes)
assert r["best_val_acc"] > 0.6, f"{model} {peer}: best val acc {r['best_val_acc']}"
print(f"{model} {peer}: gradients within {r['grad_check_rel']:.1e} of plain, best val {r['best_val_acc']:.3f}, "
      f"median epoch {r['median_epoch_s']*1e3:.1f} ms")
PY
  done
done
[ -n "$capgnn" ] || exit 0
for model in gcn sage; do
  common=(--graph "$data/cora.cgr" --model "$model" --layers 2 --hidden 16 --dropout 0 --input-dropout 0
          --weight-decay 0 --threads 1 --quiet --no-part-cache)
  "$capgnn" "${common[@]}" --epochs 1 --save "$out/c.ckpt" > "$out/log" 2>&1 || { cat "$out/log"; echo "FAIL: capgnn $model"; exit 1; }
  "$capgnn" "${common[@]}" --epochs 11 --resume "$out/c.ckpt" --metrics "$out/m.jsonl" > "$out/log" 2>&1 ||
    { cat "$out/log"; echo "FAIL: capgnn --resume $model"; exit 1; }
  "$py" "$(dirname "$script")/torch_resume.py" "$out/c.ckpt" "$data/cora.cgr" 10 --threads 1 > "$out/t.txt" 2>"$out/log" ||
    { cat "$out/log"; echo "FAIL: torch_resume.py $model"; exit 1; }
  "$py" - "$out/m.jsonl" "$out/t.txt" "$model" <<'PY'
import json, sys
cap = {x["epoch"]: x["loss"] for x in map(json.loads, open(sys.argv[1])) if "epoch" in x and not x.get("summary")}
tor = {int(e): float(l) for e, l in (line.split() for line in open(sys.argv[2]))}
assert sorted(tor) == list(range(2, 12)) and all(e in cap for e in tor), (sorted(cap), sorted(tor))
worst = max(abs(cap[e] - tor[e]) / abs(tor[e]) for e in tor)
assert worst <= 1e-5, [(e, cap[e], tor[e]) for e in sorted(tor)]
print(f"{sys.argv[3]}: capgnn and PyTorch from one checkpoint, epochs 2-11: losses within {worst:.1e} (relative)")
PY
done
