#!/usr/bin/env bash
# benchmarks/bench_layer0.sh — where layer 0 gets its halo rows (--layer0-halo) with and
# without the halo cache, on P ranks as emulated nodes (README, "Layer 0 on P ranks").
#
# Runs each configuration CACHE:LAYER0 (CACHE none or jaca, LAYER0 auto, local or
# exchange) R times, alternating the configurations (a, b, c, a, b, c, ...) so that the
# machine's drift hits all alike, and prints per run the median epoch time over epochs
# 2..E, the slowest rank's compute, the halo and inter-node bytes of epoch 2, the final
# loss and what --layer0-halo chose (the metrics summary's layer0_halo_chosen); then the
# median over the runs of each configuration. One thread per rank, ranks bound to the
# cores round-robin (as bench_plan.sh), METIS partitions from a partition cache. Run
# under `chrt -r`, the round-robin quantum is set to 4 ms for the runs (wait_idle.sh).
# Fails (exit 1) when a run fails, or when two runs of one configuration or the runs of
# the exact configurations (all of them: the cache at staleness 0) disagree in the last
# epoch's loss by more than 1e-6 relative (local and exchange round differently; one
# configuration's runs are bit-identical).
#
# usage: benchmarks/bench_layer0.sh [-c CAPGNN] [-g GRAPH] [-m "MODEL FLAGS"] [-e EPOCHS]
#                                   [-p P] [-n NODES] [-C CONFIGS] [-r REPEATS] [-o OUTDIR]
#   defaults: build/bin/capgnn, synth:reddit:scale=0.05, "--layers 3 --hidden 64", 10
#   epochs, P = 4 on 2 nodes, "none:auto jaca:auto jaca:local", 3 repeats,
#   results/bench_layer0. cora needs CAPGNN_DATA.
set -euo pipefail

capgnn=build/bin/capgnn
graph="synth:reddit:scale=0.05"
model="--layers 3 --hidden 64"
epochs=10
P=4
nodes=2
configs="none:auto jaca:auto jaca:local"
repeats=3
outdir=results/bench_layer0
while getopts "c:g:m:e:p:n:C:r:o:h" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    g) graph=$OPTARG ;;
    m) model=$OPTARG ;;
    e) epochs=$OPTARG ;;
    p) P=$OPTARG ;;
    n) nodes=$OPTARG ;;
    C) configs=$OPTARG ;;
    r) repeats=$OPTARG ;;
    o) outdir=$OPTARG ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2 ;;
  esac
done
[ -x "$capgnn" ] || { echo "bench_layer0.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
[ "$epochs" -ge 2 ] 2>/dev/null || { echo "bench_layer0.sh: -e $epochs: at least 2 epochs (the medians are over 2..E)" >&2; exit 2; }
for c in $configs; do
  case $c in
    none:auto|none:local|none:exchange|jaca:auto|jaca:local|jaca:exchange) ;;
    *) echo "bench_layer0.sh: unknown configuration '$c' (CACHE:LAYER0, none|jaca : auto|local|exchange)" >&2; exit 2 ;;
  esac
done
mpiexec=${MPIEXEC:-mpiexec}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$outdir/part-cache"
. "$(dirname "$0")/wait_idle.sh"
rr_timeslice 4
echo "loadavg before: $(cat /proc/loadavg)"
read -r -a mflags <<< "$model"
: > "$outdir/runs.tsv"
for rep in $(seq 1 "$repeats"); do
  for c in $configs; do
    cache=${c%%:*} l0=${c##*:}
    cflags=(--layer0-halo "$l0")
    [ "$cache" = none ] || cflags+=(--cache-policy "$cache" --cache-host-mb 0 --cache-device-mb 0)
    met="$outdir/metrics_${cache}_${l0}_r$rep.jsonl"
    cmd=(env CAPGNN_EMULATE_NODES="$nodes" "$mpiexec" -n "$P" --map-by core:OVERSUBSCRIBE --bind-to
         core:overload-allowed -x CAPGNN_EMULATE_NODES "$capgnn" --graph "$graph" --model gcn "${mflags[@]}"
         --epochs "$epochs" --eval-every 100000 --device cpu --threads 1 --quiet --partition metis --part-seed 1
         --part-cache "$outdir/part-cache" "${cflags[@]}" --metrics "$met" --force)
    [ "$rep" != 1 ] || echo "$c: ${cmd[*]}"
    "${cmd[@]}" > "$outdir/log_${cache}_${l0}_r$rep.txt" 2>&1 ||
      { cat "$outdir/log_${cache}_${l0}_r$rep.txt" >&2; echo "bench_layer0.sh: $c failed" >&2; exit 1; }
    printf '%s\t%s\n' "$c" "$met" >> "$outdir/runs.tsv"
  done
done
echo "loadavg after: $(cat /proc/loadavg)"
echo "machine: $(hostname); $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); $(nproc) cores"
python3 - "$outdir/runs.tsv" "$graph" "$P" "$nodes" <<'PY'
import json, statistics as S, sys
runs = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"{sys.argv[2]}, P = {sys.argv[3]} on {sys.argv[4]} node(s); medians over epochs 2..E of each run")
print(f"{'config':<15} {'chosen':<9} {'epoch ms':>9} {'compute ms':>11} {'halo MB':>8} {'inter MB':>9} {'loss':>12}")
by, ok, losses = {}, True, []
for c, path in runs:
    recs = [json.loads(l) for l in open(path)]
    e = [x for x in recs if not x.get("summary") and x["epoch"] >= 2]
    summ = [x for x in recs if x.get("summary")][-1]
    r = dict(epoch=S.median(x["epoch_s"] for x in e) * 1e3, compute=S.median(x["compute_max_s"] for x in e) * 1e3,
             halo=e[0]["halo_bytes"] / 1e6, inter=e[0].get("inter_node_bytes", 0) / 1e6, loss=e[-1]["loss"],
             chosen=summ.get("layer0_halo_chosen", "?"))
    by.setdefault(c, []).append(r)
    losses.append((c, r["loss"]))
    print(f"{c:<15} {r['chosen']:<9} {r['epoch']:>9.2f} {r['compute']:>11.2f} {r['halo']:>8.2f} {r['inter']:>9.2f} "
          f"{r['loss']:>12.8f}")
for c, rs in by.items():
    if len({x["loss"] for x in rs}) != 1:
        print(f"FAIL {c}: its runs' last losses differ: {[x['loss'] for x in rs]}")
        ok = False
ref = losses[0][1]
for c, l in losses:
    if abs(l - ref) > 1e-6 * abs(ref):
        print(f"FAIL {c}: last loss {l!r} against {losses[0][0]}'s {ref!r}")
        ok = False
print("median over the runs:")
for c, rs in by.items():
    each = ", ".join("%.2f" % x["epoch"] for x in rs)
    print(f"{c:<15} {rs[0]['chosen']:<9} epoch {S.median(x['epoch'] for x in rs):.2f} ms (runs {each}), "
          f"compute {S.median(x['compute'] for x in rs):.2f} ms")
sys.exit(0 if ok else 1)
PY
