#!/usr/bin/env bash
# benchmarks/bench_small.sh — the CPU epoch on a small graph, where per-call costs and
# scalar loops weigh more than in a large one: cora GCN 2 x 16 on 1, 2 and 4 ranks of one
# thread (4 ranks share the 2 cores of the development VM: bound round-robin, as
# bench_plan.sh) and cora GAT (configs/cora-gat.ini) on one rank, each without evaluation.
# With two binaries (-c A -b B) the runs alternate A, B, A, B... so that a drift of the
# machine hits both, and the losses of A and B must agree to the last printed digit (CPU
# changes that keep the bits: exit 1 otherwise), or with -t RTOL within RTOL relative per
# epoch (a change of the rounding, e.g. a vector exponential: the largest difference is
# printed).
#
# Prints per binary and configuration the median over the runs of each run's median epoch
# (epochs 6..E) and of the slowest rank's median compute (epoch - communication), the
# machine, the commands, and writes OUTDIR/bench_small.json.
#
# usage: benchmarks/bench_small.sh [-c CAPGNN] [-b CAPGNN_B] [-r REPEATS] [-e EPOCHS]
#                                  [-t RTOL] [-o OUTDIR]
#   defaults: build/bin/capgnn, no B, 3 repeats, 200 epochs (GAT: 100),
#   results/bench_small. Needs CAPGNN_DATA (cora.cgr) and, for P > 1, mpiexec.
set -euo pipefail

capgnn=build/bin/capgnn
capgnn_b=
repeats=3
epochs=200
outdir=results/bench_small
rtol=0
while getopts "c:b:r:e:t:o:h" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    b) capgnn_b=$OPTARG ;;
    r) repeats=$OPTARG ;;
    e) epochs=$OPTARG ;;
    t) rtol=$OPTARG ;;
    o) outdir=$OPTARG ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2 ;;
  esac
done
python3 -c "import sys; t = float(sys.argv[1]); sys.exit(0 if t >= 0 else 1)" "$rtol" 2>/dev/null ||
  { echo "bench_small.sh: -t '$rtol': expected a relative tolerance >= 0" >&2; exit 2; }
[ "$rtol" = 0 ] || [ -n "$capgnn_b" ] || { echo "bench_small.sh: -t compares A's losses with B's: give -b too" >&2; exit 2; }
for b in "$capgnn" ${capgnn_b:+"$capgnn_b"}; do
  [ -x "$b" ] || { echo "bench_small.sh: $b is not an executable (build first, or pass -c/-b)" >&2; exit 2; }
done
[ -n "${CAPGNN_DATA:-}" ] || { echo "bench_small.sh: set CAPGNN_DATA to the folder of cora.cgr" >&2; exit 2; }
mkdir -p "$outdir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
. "$(dirname "$0")/wait_idle.sh"
rr_timeslice 4
mpiexec=${MPIEXEC:-mpiexec}
bind=(--map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed)
gat_epochs=$((epochs / 2))
configs=("gcn_p1" "gcn_p2" "gcn_p4" "gat_p1")
cmd_of() { # BINARY CONFIG METRICS
  local b=$1 c=$2 m=$3
  case $c in
    gcn_p*) echo "$mpiexec -n ${c#gcn_p} ${bind[*]} $b --graph cora --model gcn --layers 2 --hidden 16 --epochs $epochs --eval-every 100000 --device cpu --threads 1 --quiet --partition metis --part-seed 1 --no-part-cache --metrics $m" ;;
    gat_p1) echo "$b --config configs/cora-gat.ini --epochs $gat_epochs --eval-every 100000 --early-stop 0 --device cpu --threads 1 --quiet --metrics $m" ;;
  esac
}
echo "loadavg before: $(cat /proc/loadavg)" | tee "$outdir/loadavg.txt"
bins=(A); [ -n "$capgnn_b" ] && bins+=(B)
for r in $(seq 1 "$repeats"); do
  for c in "${configs[@]}"; do
    for w in "${bins[@]}"; do
      b=$capgnn; [ "$w" = B ] && b=$capgnn_b
      m="$outdir/metrics_${c}_${w}_r$r.jsonl"; rm -f "$m"
      cmd=$(cmd_of "$b" "$c" "$m")
      echo "$c $w (run $r): $cmd" >&2
      $cmd > "$outdir/log_${c}_${w}_r$r.txt" 2>&1 || { echo "bench_small.sh: $c $w failed (log: $outdir/log_${c}_${w}_r$r.txt)" >&2; exit 1; }
    done
  done
done
echo "loadavg after: $(cat /proc/loadavg)" | tee -a "$outdir/loadavg.txt"
python3 - "$outdir" "$repeats" "$capgnn" "$capgnn_b" "$(cmd_of CAPGNN gcn_p2 M)" "$(cmd_of CAPGNN gat_p1 M)" "$rtol" <<'PY'
import json, os, platform, statistics as st, sys
out, R, a, b, cmd_gcn, cmd_gat = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rtol = float(sys.argv[7])
bins = ["A"] + (["B"] if b else [])
def run(c, w, r):
    recs = [json.loads(l) for l in open(f"{out}/metrics_{c}_{w}_r{r}.jsonl") if '"epoch_s"' in l]
    body = recs[5:]
    comp = [max(x.get("rank_compute_s", [x["compute_s"]])) for x in body]
    return st.median(x["epoch_s"] for x in body), st.median(comp), [x["loss"] for x in recs]
model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"machine: {platform.node()}; {model}; {os.cpu_count()} CPUs")
print(f"A = {a}" + (f", B = {b}" if b else ""))
print(f"commands (CAPGNN = the binary): {cmd_gcn} (and -n 1, -n 4); {cmd_gat}")
print(f"{'config':8s} " + " ".join(f"{w + ' epoch ms':>12s} {w + ' compute':>10s}" for w in bins) + ("   B / A epoch" if b else ""))
res, ok = {}, True
for c in ["gcn_p1", "gcn_p2", "gcn_p4", "gat_p1"]:
    row = {}
    for w in bins:
        runs = [run(c, w, r) for r in range(1, R + 1)]
        row[w] = {"epoch_ms": [x[0] * 1e3 for x in runs], "compute_ms": [x[1] * 1e3 for x in runs],
                  "median_epoch_ms": st.median(x[0] for x in runs) * 1e3,
                  "median_compute_ms": st.median(x[1] for x in runs) * 1e3}
        losses = {tuple(round(v, 6) for v in x[2]) for x in runs}
        if len(losses) != 1:
            print(f"FAIL {c} {w}: the runs' losses differ"); ok = False
        row[w]["losses"] = list(next(iter(losses)))
    if b and rtol > 0:
        la, lb = row["A"]["losses"], row["B"]["losses"]
        d = max((abs(x - y) / max(abs(x), 1e-30) for x, y in zip(la, lb)), default=0.0) if len(la) == len(lb) else float("inf")
        row["loss_max_rel_diff"] = d
        print(f"{c}: A and B losses, largest relative difference per epoch {d:.2e}")
        if not d <= rtol:
            print(f"FAIL {c}: A and B losses differ by more than {rtol:g} relative"); ok = False
    elif b and row["A"]["losses"] != row["B"]["losses"]:
        print(f"FAIL {c}: A and B give different losses"); ok = False
    res[c] = row
    line = f"{c:8s} " + " ".join(f"{row[w]['median_epoch_ms']:12.3f} {row[w]['median_compute_ms']:10.3f}" for w in bins)
    if b: line += f"   {row['B']['median_epoch_ms'] / row['A']['median_epoch_ms']:.2f}x"
    print(line)
print(f"medians over {R} runs of each run's median over epochs 6..E; compute: the slowest rank's")
json.dump({"machine": {"host": platform.node(), "cpu": model, "cpus": os.cpu_count()}, "A": a, "B": b or None,
           "repeats": R, "loss_rtol": rtol, "commands": [cmd_gcn, cmd_gat], "results": res, "passed": ok},
          open(f"{out}/bench_small.json", "w"), indent=1)
sys.exit(0 if ok else 1)
PY
