#!/usr/bin/env bash
# benchmarks/bench_prefetch.sh — the halo cache's prefetch thread on and off (issue #13
# item 3): P = 4 ranks as 2 emulated nodes (CAPGNN_EMULATE_NODES=2), CPU backend, 1
# thread per rank, policy jaca at capacity 1, --staleness 0 and 5, on cora (GCN 2 x 16,
# configs/cora.ini without early stopping) and synth:reddit:scale=0.05 (GCN 3 x 64).
# Runs alternate on / off, REPS times, so that a change in the machine's load hits both.
# Per run: the median epoch time (median_epoch_s) and the training threads' time in the
# exchange's end on node-tier rows (the summary's cache end_wait_s, summed over the ranks
# and epochs; reported per rank and epoch), with the rows prefetched / copied in end.
# Also checks that on and off give the same final loss (bit for bit, as printed).
#
#   benchmarks/bench_prefetch.sh [-c build/bin/capgnn] [-o outdir] [-r REPS] [-g "cora reddit"]
set -euo pipefail
capgnn=build/bin/capgnn
outdir=bench-prefetch
reps=2
graphs="cora reddit"
while getopts "c:o:r:g:" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    o) outdir=$OPTARG ;;
    r) reps=$OPTARG ;;
    g) graphs=$OPTARG ;;
    *) echo "usage: $0 [-c capgnn] [-o outdir] [-r reps] [-g graphs]" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
mpiexec=${MPIEXEC:-mpiexec}
mkdir -p "$outdir/runs" "$outdir/part-cache"

graph_args() {
  case $1 in
    cora) echo "--config $here/configs/cora.ini --graph cora --early-stop 0 --epochs 100" ;;
    reddit)
      local f="$outdir/reddit-0.05.cgr"
      [ -f "$f" ] || "$capgnn" gen synth:reddit:scale=0.05 --output "$f" --quiet >&2
      echo "--graph $f --model gcn --layers 3 --hidden 64 --dropout 0.5 --lr 0.01 --epochs 30 --eval-every 5" ;;
    *) echo "bench_prefetch.sh: unknown graph '$1'" >&2; exit 2 ;;
  esac
}

: > "$outdir/commands.txt"
for g in $graphs; do
  for s in 0 5; do
    for r in $(seq 1 "$reps"); do
      for pf in on off; do
        tag="${g}_s${s}_${pf}_r${r}"
        m="$outdir/runs/$tag.jsonl"
        cmd=("$mpiexec" -n 4 --oversubscribe --allow-run-as-root "$capgnn" $(graph_args "$g") --device cpu
             --threads 1 --quiet --seed 1 --partition metis --part-seed 1 --part-cache "$outdir/part-cache"
             --metrics "$m" --force --cache-policy jaca --cache-capacity 1 --cache-host-mb 0 --cache-device-mb 0
             --staleness "$s" --cache-prefetch "$pf")
        echo "CAPGNN_EMULATE_NODES=2 ${cmd[*]}" >> "$outdir/commands.txt"
        echo "$tag (loadavg $(cut -d' ' -f1-3 /proc/loadavg))" >&2
        echo "$tag $(cut -d' ' -f1-3 /proc/loadavg)" >> "$outdir/loadavg.txt"
        CAPGNN_EMULATE_NODES=2 "${cmd[@]}" > "$outdir/runs/$tag.log" 2>&1 ||
          { cat "$outdir/runs/$tag.log" >&2; echo "bench_prefetch.sh: $tag failed" >&2; exit 1; }
      done
    done
  done
done

python3 - "$outdir" <<'EOF'
import json, sys, glob, os, statistics, collections
out = sys.argv[1]
rows = collections.defaultdict(list)
loss = {}
for f in sorted(glob.glob(os.path.join(out, "runs", "*.jsonl"))):
    tag = os.path.basename(f)[:-6]
    g, s, pf, r = tag.split("_")
    summ = None
    epochs = []
    for line in open(f):
        o = json.loads(line)
        if o.get("summary"): summ = o
        elif "epoch" in o: epochs.append(o)
    c = summ["cache"]
    n = summ["epochs"]
    rows[(g, s, pf)].append((summ["median_epoch_s"], c["end_wait_s"] / (4 * n), c["prefetched"], c["end_copied"]))
    loss.setdefault((g, s, r), {})[pf] = summ["final_loss"]
print("| graph | S | prefetch | median epoch (s), per run | end wait per rank and epoch (ms), per run | rows prefetched / copied in end |")
print("|---|---:|---|---|---|---|")
for (g, s, pf), v in sorted(rows.items()):
    print("| %s | %s | %s | %s | %s | %d / %d |" % (g, s[1:], pf, ", ".join("%.4f" % x[0] for x in v),
          ", ".join("%.2f" % (1e3 * x[1]) for x in v), v[0][2], v[0][3]))
bad = [(k, d) for k, d in loss.items() if len(d) == 2 and d["on"] != d["off"]]
for k, d in bad: print("DIFFERENT final loss", k, d)
print("final loss on == off in every pair" if not bad else "FAIL: final losses differ")
sys.exit(1 if bad else 0)
EOF
