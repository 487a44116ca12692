#!/usr/bin/env bash
# The PyTorch peers of the benchmark (benchmarks/torch_gcn.py) compute what the plain
# peer computes: one step's gradients of the tuned peer (transpose built once) and, when
# torch_geometric is installed, of PyG's layers equal the plain autograd ones (relative
# 1e-4), for GCN and GraphSAGE on cora, on the CPU; and a short run learns.
# Skipped (77) without cora or without a Python that imports torch: the product never
# needs Python, the benchmark's peers do. CAPGNN_TORCH_PYTHON names that Python
# (default python3).
# usage: test_torch_peer.sh SCRIPT DATASETS_DIR
set -euo pipefail
script=$1
data=$2
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
