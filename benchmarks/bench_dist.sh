#!/usr/bin/env bash
# benchmarks/bench_dist.sh — partition-parallel training with P = 1, 2, 4 ranks.
#
# Runs `capgnn` under mpiexec on a Reddit-shaped synthetic graph (the exact baseline:
# halo exchange both ways every layer, one gradient all-reduce per step) and prints,
# per P: the median epoch time, its compute/communication split (rank 0's, and the
# slowest / fastest rank's compute), the halo bytes counted per epoch and the bytes
# modelled from the partition. The model is independent of the training run: the halo
# rows come from `capgnn partition` (part_stats: sum of halo vertices over the parts)
# and the widths from the layer shapes:
#   modelled = sum over layers l >= 1 of (halo rows x width_l x 4 bytes x 2 directions)
#   width_l  = fout_l if fout_l < fin_l (the layer transforms first and exchanges the
#              narrower rows) else fin_l; layer 0's feature rows are fetched once at
#              set-up, not in any epoch.
# The script fails (exit 1) when counted != modelled on any epoch, or when epoch 1's
# loss (before any update) on P ranks differs from P = 1's by more than 1e-5 relative.
#
# usage: benchmarks/bench_dist.sh [-c CAPGNN] [-g GRAPH] [-p "1 2 4"] [-e EPOCHS]
#                                 [-H HIDDEN] [-L LAYERS] [-o OUTDIR]
#   defaults: build/bin/capgnn, synth:reddit:scale=0.1, P = 1 2 4, 6 epochs, 3-layer
#   GCN hidden 256, outputs in results/bench_dist/ (metrics, partition JSON, and
#   bench_dist.json with the table's numbers). CPU backend; each rank gets
#   max(1, cores / P) threads so that every P uses the whole machine.
set -euo pipefail

capgnn=build/bin/capgnn
graph="synth:reddit:scale=0.1"
ranks="1 2 4"
epochs=6
hidden=256
layers=3
outdir=results/bench_dist
while getopts "c:g:p:e:H:L:o:h" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    g) graph=$OPTARG ;;
    p) ranks=$OPTARG ;;
    e) epochs=$OPTARG ;;
    H) hidden=$OPTARG ;;
    L) layers=$OPTARG ;;
    o) outdir=$OPTARG ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
  esac
done
[ -x "$capgnn" ] || { echo "bench_dist.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
mpiexec=${MPIEXEC:-mpiexec}
mkdir -p "$outdir/cache"
cores=$(nproc)
common=(--graph "$graph" --model gcn --layers "$layers" --hidden "$hidden" --dropout 0.5
        --epochs "$epochs" --eval-every 100000 --device cpu --quiet
        --partition metis --part-seed 1 --part-cache "$outdir/cache")

cmds=()
for p in $ranks; do
  t=$(( cores / p )); [ "$t" -ge 1 ] || t=1
  part_json="$outdir/part_p$p.json"
  # The partition the run will use (same key -> same cached owner array) and its stats.
  "$capgnn" partition --graph "$graph" --parts "$p" --method metis --seed 1 \
    --cache "$outdir/cache" --json "$part_json" > "$outdir/part_p$p.txt"
  cmd=("$mpiexec" -n "$p" --oversubscribe --allow-run-as-root "$capgnn" "${common[@]}"
       --threads "$t" --metrics "$outdir/metrics_p$p.jsonl")
  cmds+=("${cmd[*]}")
  echo "P=$p: ${cmd[*]}" >&2
  "${cmd[@]}" > "$outdir/log_p$p.txt" 2>&1 || { cat "$outdir/log_p$p.txt" >&2; echo "bench_dist.sh: P=$p failed" >&2; exit 1; }
done

machine="$(hostname); $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); $cores cores; \
$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $($mpiexec --version 2>&1 | head -1)"

python3 - "$outdir" "$ranks" "$machine" "$cores" "${cmds[@]}" <<'PY'
import json, statistics, sys
outdir, ranks, machine, cores = sys.argv[1], [int(p) for p in sys.argv[2].split()], sys.argv[3], int(sys.argv[4])
cmds = sys.argv[5:]
ok, rows, base_loss = True, [], None
for p, cmd in zip(ranks, cmds):
    recs = [json.loads(l) for l in open(f"{outdir}/metrics_p{p}.jsonl")]
    ep = [r for r in recs if not r.get("summary")]
    summ = [r for r in recs if r.get("summary")][0]
    part = json.load(open(f"{outdir}/part_p{p}.json"))
    halo_rows = part["totals"]["halo_total"]
    L, hidden, classes = summ["layers"], summ["hidden"], summ["classes"]
    widths = []
    for l in range(1, L):
        fin, fout = hidden, (classes if l == L - 1 else hidden)
        widths.append(fout if fout < fin else fin)
    modelled = halo_rows * sum(widths) * 4 * 2
    counted = [int(r["halo_bytes"]) for r in ep]
    if any(c != modelled for c in counted):
        print(f"FAIL P={p}: halo bytes counted {counted} != modelled {modelled} "
              f"({halo_rows} halo rows x widths {widths} x 4 x 2)")
        ok = False
    if base_loss is None:
        base_loss = ep[0]["loss"]
    rel = abs(ep[0]["loss"] - base_loss) / abs(base_loss)
    if rel > 1e-5:
        print(f"FAIL P={p}: epoch-1 loss {ep[0]['loss']!r} vs P=1 {base_loss!r} (rel {rel:.2e} > 1e-5)")
        ok = False
    med = lambda k: statistics.median(r[k] for r in ep)
    rows.append(dict(P=p, threads_per_rank=summ["threads"], epochs=len(ep), median_epoch_s=med("epoch_s"),
                     median_compute_s=med("compute_s"), median_comm_s=med("comm_s"),
                     median_compute_max_s=med("compute_max_s"), median_compute_min_s=med("compute_min_s"),
                     halo_rows=halo_rows, widths=widths, halo_bytes_counted=counted[0],
                     halo_bytes_modelled=modelled, allreduce_bytes=int(ep[0]["allreduce_bytes"]),
                     epoch1_loss=ep[0]["loss"], epoch1_loss_rel_err=rel, command=cmd))
g = summ
print(f"graph {g['graph']}: {g['nodes']} vertices, {g['edges']} edges, {g['features']} features, "
      f"{g['classes']} classes; GCN {g['layers']} layers, hidden {g['hidden']}, {g['params']} parameters")
print(f"machine: {machine}")
hdr = (f"{'P':>2} {'thr':>3} {'epoch ms':>9} {'compute ms':>10} {'comm ms':>8} {'comm %':>6} "
       f"{'cmp max ms':>10} {'cmp min ms':>10} {'halo rows':>9} {'halo B/epoch':>13} {'modelled B':>13} "
       f"{'allreduce B':>11}")
print(hdr)
print("-" * len(hdr))
for r in rows:
    print(f"{r['P']:>2} {r['threads_per_rank']:>3} {r['median_epoch_s']*1e3:>9.1f} "
          f"{r['median_compute_s']*1e3:>10.1f} {r['median_comm_s']*1e3:>8.1f} "
          f"{100*r['median_comm_s']/r['median_epoch_s']:>5.1f}% {r['median_compute_max_s']*1e3:>10.1f} "
          f"{r['median_compute_min_s']*1e3:>10.1f} {r['halo_rows']:>9} {r['halo_bytes_counted']:>13} "
          f"{r['halo_bytes_modelled']:>13} {r['allreduce_bytes']:>11}")
print("medians over the epochs of one run; compute/comm are rank 0's, cmp max/min the slowest/fastest "
      "rank's compute; halo bytes summed over ranks (sent), per training step")
print("halo bytes counted == modelled on every epoch: " + ("yes" if ok else "NO"))
for r in rows:
    print(f"  P={r['P']}: {r['command']}")
json.dump(dict(machine=machine, cores=cores, graph=g["graph"], nodes=g["nodes"], edges=g["edges"],
               model="gcn", layers=g["layers"], hidden=g["hidden"], rows=rows, bytes_match=ok),
          open(f"{outdir}/bench_dist.json", "w"), indent=1)
print(f"results: {outdir}/bench_dist.json")
sys.exit(0 if ok else 1)
PY
