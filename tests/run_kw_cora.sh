#!/usr/bin/env bash
# tests/run_kw_cora.sh CAPGNN CONFIGS DATASETS — Kipf & Welling's protocol on Cora
# (configs/cora.ini: 2-layer GCN, 16 hidden, dropout 0.5, Adam lr 0.01, weight decay
# 5e-4 on the first layer, at most 200 epochs, their early stopping with a window of
# 10), seeds 1-10 in one command (--seeds). K&W report the test accuracy of the model
# at the epoch their rule stops (81.5 %): the aggregate's final_test_acc mean must be
# within 0.7 points of it. Skipped (77) without the datasets. About 40 s on 2 cores.
set -euo pipefail
capgnn=$1 configs=$2 data=$3
[[ -f $data/cora.cgr ]] || { echo "cora.cgr not in $data: skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CAPGNN_DATA=$data "$capgnn" --config "$configs/cora.ini" --seeds 1,2,3,4,5,6,7,8,9,10 --threads 1 --quiet \
  --metrics "$out/m.jsonl" | tee "$out/stdout"
agg=$(grep '"aggregate":true' "$out/m.jsonl")
field() { sed -E "s/.*\"$1\":\{\"mean\":([0-9.eE+-]+),\"std\":([0-9.eE+-]+).*/\1 \2/" <<<"$agg"; }
read -r final final_sd <<<"$(field final_test_acc)"
read -r at_best at_best_sd <<<"$(field test_acc_at_best_val)"
read -r epochs epochs_sd <<<"$(field epochs)"
awk -v m="$final" -v s="$final_sd" -v b="$at_best" -v bs="$at_best_sd" -v e="$epochs" -v es="$epochs_sd" 'BEGIN {
  printf "K&W protocol, 10 seeds: test acc at the stop %.2f +- %.2f %% (paper 81.5 %%); at the best val epoch %.2f +- %.2f %%; epochs %.1f +- %.1f\n",
         100 * m, 100 * s, 100 * b, 100 * bs, e, es
  d = 100 * m - 81.5; if (d < 0) d = -d
  if (d > 0.7) { printf "FAIL: %.2f points from 81.5 %%\n", d; exit 1 }
}'
