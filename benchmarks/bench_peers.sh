#!/usr/bin/env bash
# capgnn against its PyTorch peers on the same .cgr file, the same model and the same
# threads, in one run (issue #14, item 5): for each synth:reddit scale and each model
# (GCN, GraphSAGE-mean; 3 layers, hidden 256, dropout 0.5, Adam lr 0.01), capgnn and
# each peer of benchmarks/torch_gcn.py (plain: torch.sparse.mm with autograd as it
# comes; tuned: the transpose built once; pyg: PyTorch Geometric's layers) train for
# EPOCHS epochs; with -r R > 1 every system runs R times, the systems interleaved so
# that drift on a shared machine hits them alike. Prints the median epoch time of
# each (capgnn: the median of its epochs after the first; peers: after 3 warm-up
# epochs, all runs pooled), the peer / capgnn ratio, peak memory and test accuracy
# at the best validation epoch, the machine and the command; writes bench_peers.json.
# A peer whose gradients differ from plain autograd's fails the run (--check-grads).
#
# usage: benchmarks/bench_peers.sh [-c CAPGNN] [-y PYTHON] [-s "0.1 0.25"] [-m "gcn sage"]
#                                  [-P "plain tuned pyg"] [-e EPOCHS] [-t THREADS]
#                                  [-d cpu|cuda] [-r REPEATS] [-q MAXWAIT] [-o OUTDIR]
#   defaults: build/bin/capgnn, python3, scales 0.1 and 0.25, both models, the peers
#   the Python can run (pyg only with torch_geometric), 10 epochs, 2 threads, cpu,
#   1 run, no waiting, outputs in results/bench_peers/. With -q S every run first waits
#   (at most S seconds) for an idle machine, as bench_dist.sh does.
set -euo pipefail
capgnn=build/bin/capgnn
py=python3
scales="0.1 0.25"
models="gcn sage"
peers=""
epochs=10
threads=2
device=cpu
repeats=1
maxwait=0
outdir=results/bench_peers
while getopts "c:y:s:m:P:e:t:d:r:q:o:h" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    y) py=$OPTARG ;;
    s) scales=$OPTARG ;;
    m) models=$OPTARG ;;
    P) peers=$OPTARG ;;
    e) epochs=$OPTARG ;;
    t) threads=$OPTARG ;;
    d) device=$OPTARG ;;
    r) repeats=$OPTARG ;;
    q) maxwait=$OPTARG ;;
    o) outdir=$OPTARG ;;
    *) sed -n '2,21p' "$0"; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$capgnn" ] || { echo "bench_peers.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
"$py" -c 'import torch' 2>/dev/null || { echo "bench_peers.sh: $py cannot import torch (pass -y)" >&2; exit 2; }
if [ -z "$peers" ]; then
  peers="plain tuned"
  "$py" -c 'import torch_geometric' 2>/dev/null && peers="$peers pyg"
fi
mkdir -p "$outdir"

. "$(dirname "$0")/wait_idle.sh"

model_args=(--layers 3 --hidden 256 --dropout 0.5 --lr 0.01 --weight-decay 0 --epochs "$epochs")
runs=() # "scale model system file" in the order they ran
for s in $scales; do
  g="$outdir/reddit_$s.cgr"
  [ -f "$g" ] || "$capgnn" gen "synth:reddit:scale=$s" --output "$g" --quiet
  for m in $models; do
    for rep in $(seq 1 "$repeats"); do
      met="$outdir/capgnn_${s}_${m}_r$rep.jsonl"
      wait_idle "$maxwait"
      echo "scale $s $m capgnn (run $rep)" >&2
      "$capgnn" --graph "$g" --model "$m" "${model_args[@]}" --device "$device" --threads "$threads" \
        --eval-every 1 --quiet --force --metrics "$met" > "$outdir/log_capgnn_${s}_${m}_r$rep.txt" 2>&1 ||
        { cat "$outdir/log_capgnn_${s}_${m}_r$rep.txt" >&2; exit 1; }
      runs+=("$s	$m	capgnn	$met")
      for p in $peers; do
        js="$outdir/${p}_${s}_${m}_r$rep.json"
        wait_idle "$maxwait"
        echo "scale $s $m $p (run $rep)" >&2
        PYTHONUNBUFFERED=1 "$py" "$here/torch_gcn.py" --graph "$g" --model "$m" --peer "$p" \
          --device "$device" --threads "$threads" "${model_args[@]}" --check-grads --json "$js" \
          > "$outdir/log_${p}_${s}_${m}_r$rep.txt" 2>&1 ||
          { tail -5 "$outdir/log_${p}_${s}_${m}_r$rep.txt" >&2; echo "bench_peers.sh: $p failed" >&2; exit 1; }
        runs+=("$s	$m	$p	$js")
      done
    done
  done
done

# The table, from the files (capgnn: JSON Lines with a summary; peers: JSON).
printf '%s\n' "${runs[@]}" > "$outdir/runs.tsv"
"$py" - "$outdir/runs.tsv" "$outdir/bench_peers.json" "$device" "$threads" "$*" <<'PY'
import json, os, statistics, sys
runs, out, device, threads, args = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
rows = {}
for line in open(runs).read().splitlines():
    s, m, system, f = line.split("\t")
    r = rows.setdefault((s, m, system), {"times": [], "acc": [], "mem": []})
    if system == "capgnn":
        recs = [json.loads(l) for l in open(f) if l.strip()]
        ep = [x for x in recs if not x.get("summary")]
        summ = [x for x in recs if x.get("summary")][-1]
        r["times"] += [x["epoch_s"] for x in ep[1:]]
        r["acc"].append(summ["test_acc_at_best_val"])
        r["mem"].append(summ["peak_rss_bytes"])
    else:
        j = json.load(open(f))
        r["times"].append(j["median_epoch_s"])
        r["acc"].append(j["test_acc_at_best_val"])
        r["mem"].append(j["peak_mem_bytes"])
        r["torch"] = j["torch"]
cpu = "?"
try:
    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
except (OSError, StopIteration):
    pass
print(f"machine: {cpu}, {os.cpu_count()} CPUs; device {device}, {threads} threads per system")
print(f"command: benchmarks/bench_peers.sh {args}")
print("| scale | model | system | median epoch ms | system / capgnn | peak memory MB | test acc at best val |")
print("|---|---|---|---:|---:|---:|---:|")
res = []
for (s, m, system), r in rows.items():
    med = statistics.median(r["times"])
    base = statistics.median(rows[(s, m, "capgnn")]["times"])
    acc = statistics.mean(r["acc"])
    mem = max(r["mem"])
    print(f"| {s} | {m} | {system} | {med*1e3:.1f} | {med/base:.2f} | {mem/2**20:.0f} | {acc:.4f} |")
    res.append({"scale": float(s), "model": m, "system": system, "median_epoch_s": med,
                "ratio_to_capgnn": med / base, "peak_mem_bytes": mem, "test_acc_at_best_val": acc,
                "runs": len(r["acc"]), "torch": r.get("torch")})
with open(out, "w") as fh:
    json.dump({"machine": cpu, "cpus": os.cpu_count(), "device": device, "threads": threads,
               "command": "benchmarks/bench_peers.sh " + args, "results": res}, fh, indent=1)
print(f"written: {out}")
PY
