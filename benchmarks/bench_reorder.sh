#!/usr/bin/env bash
# benchmarks/bench_reorder.sh — locality reordering (issue #14, item 2): the CPU epoch of a
# Reddit-shaped graph in its generated, clustered vertex order, in a random ("publisher")
# order (the generator's shuffle=1), and in the random order with --reorder auto and each
# method (rcm, cluster, metis).
#
# Writes both graphs once as .cgr files (capgnn gen), then trains each configuration on one
# process (GCN, 3 layers of 256, dropout 0.5, no evaluation, CPU backend, -t threads) and
# prints per configuration the median epoch time over all its epochs (the first epoch
# included: it is not slower on the CPU backend), the ratio to the clustered order, the
# reordering's one-off set-up cost and the tiles' reuse before and after it (graph.h,
# graph_locality; both from the run's log line). The clustered file also runs with
# --reorder auto, which must keep its order at no cost. With -r R > 1 every
# configuration runs R times, interleaved (all configurations, then again), so that drift on
# a shared machine hits all alike. /proc/loadavg is recorded before and after.
# Checks before it reports (exit 1 on failure): every run of one file, reordered or not,
# gives the same per-epoch losses within 1e-5 relative (reordering changes only the
# summation order; dropout masks follow the vertex ids, which it does not change). The
# two files name their vertices differently, so their dropout masks (and losses) differ
# and are not compared with each other.
#
# usage: benchmarks/bench_reorder.sh [-c CAPGNN] [-g SPEC] [-e EPOCHS] [-t THREADS]
#                                    [-m "auto rcm cluster metis"] [-r REPEATS] [-q MAXWAIT]
#                                    [-o OUTDIR]
#   defaults: build/bin/capgnn, synth:reddit:scale=0.25, 5 epochs, 2 threads, every method,
#   1 run each, no waiting for an idle machine, outputs in results/bench_reorder/ (graphs,
#   metrics, logs, bench_reorder.json).
set -euo pipefail

capgnn=build/bin/capgnn
spec="synth:reddit:scale=0.25"
epochs=5
threads=2
methods="auto rcm cluster metis"
repeats=1
maxwait=0
outdir=results/bench_reorder
while getopts "c:g:e:t:m:r:q:o:h" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    g) spec=$OPTARG ;;
    e) epochs=$OPTARG ;;
    t) threads=$OPTARG ;;
    m) methods=$OPTARG ;;
    r) repeats=$OPTARG ;;
    q) maxwait=$OPTARG ;;
    o) outdir=$OPTARG ;;
    *) sed -n '2,26p' "$0"; exit 2 ;;
  esac
done
[ -x "$capgnn" ] || { echo "bench_reorder.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
mkdir -p "$outdir"
. "$(dirname "$0")/wait_idle.sh"

case $spec in *:*=*) shuffled_spec="$spec,shuffle=1" ;; *) shuffled_spec="$spec:shuffle=1" ;; esac
clustered="$outdir/clustered.cgr"
shuffled="$outdir/shuffled.cgr"
echo "writing $spec -> $clustered and $shuffled_spec -> $shuffled" >&2
"$capgnn" gen "$spec" --output "$clustered" --force --quiet
"$capgnn" gen "$shuffled_spec" --output "$shuffled" --force --quiet

configs=("clustered none" "clustered auto" "shuffled none")
for m in $methods; do configs+=("shuffled $m"); done
load_before=$(cat /proc/loadavg)
runs=()
for rep in $(seq 1 "$repeats"); do
  for c in "${configs[@]}"; do
    read -r which method <<< "$c"
    file=$clustered; [ "$which" = shuffled ] && file=$shuffled
    tag="${which}_${method}_r$rep"
    met="$outdir/metrics_$tag.jsonl"
    log="$outdir/log_$tag.txt"
    cmd=("$capgnn" --graph "$file" --model gcn --layers 3 --hidden 256 --dropout 0.5 --epochs "$epochs"
         --eval-every 100000 --device cpu --threads "$threads" --reorder "$method" --metrics "$met" --force)
    echo "$which --reorder $method (run $rep): ${cmd[*]}" >&2
    wait_idle "$maxwait"
    CAPGNN_LOG_LEVEL=info "${cmd[@]}" > "$log" 2>&1 || { cat "$log" >&2; echo "bench_reorder.sh: $tag failed" >&2; exit 1; }
    runs+=("$which	$method	$met	$log	${cmd[*]}")
  done
done
load_after=$(cat /proc/loadavg)

machine="$(hostname); $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); $(nproc) cores; \
$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
printf '%s\n' "${runs[@]}" > "$outdir/runs.tsv"
python3 - "$outdir" "$machine" "$spec" "$load_before" "$load_after" <<'PY'
import json, re, statistics, sys
outdir, machine, spec, lb, la = sys.argv[1:6]
runs = [l.rstrip("\n").split("\t") for l in open(f"{outdir}/runs.tsv") if l.strip()]
ok, rows, ref_loss, order = True, [], {}, []
for which, method, _, _, _ in runs:
    if (which, method) not in order:
        order.append((which, method))
for which, method in order:
    mine = [r for r in runs if r[0] == which and r[1] == method]
    ep, setup, chosen, reuse = [], [], "none", None
    for _, _, met, log, cmd in mine:
        recs = [json.loads(l) for l in open(met)]
        e = [r for r in recs if not r.get("summary")]
        ep += e
        losses = [r["loss"] for r in e]
        ref = ref_loss.setdefault(which, losses)
        worst = max(abs(a - b) / abs(b) for a, b in zip(losses, ref))
        if len(losses) != len(ref) or worst > 1e-5:
            print(f"FAIL {which} --reorder {method}: losses {losses} vs {ref} (worst {worst:.2e} relative)")
            ok = False
        text = open(log).read()
        m = re.search(r"reorder\] .*?: (\w+) order(?: \(auto\))?: tile reuse ([0-9.]+) -> ([0-9.]+).*\(([0-9.]+) s\)", text)
        k1 = re.search(r"keeps the input order: tile reuse ([0-9.]+)", text)
        k2 = re.search(r"keeps the input order: the \w+ order's tile reuse would be ([0-9.]+) against ([0-9.]+).*\(([0-9.]+) s\)", text)
        if m:
            chosen, reuse = m.group(1), (float(m.group(2)), float(m.group(3)))
            setup.append(float(m.group(4)))
        elif k1:
            chosen, reuse = "kept", (float(k1.group(1)), float(k1.group(1)))
            setup.append(0.0)
        elif k2:
            chosen, reuse = "kept", (float(k2.group(2)), float(k2.group(2)))
            setup.append(float(k2.group(3)))
    med = statistics.median(r["epoch_s"] for r in ep)
    rows.append(dict(order=which, reorder=method, applied=chosen, runs=len(mine), epochs=len(ep), median_epoch_s=med,
                     reorder_setup_s=statistics.median(setup) if setup else 0.0,
                     tile_reuse=reuse, commands=[r[4] for r in mine]))
base = [r for r in rows if r["order"] == "clustered"][0]["median_epoch_s"]
for r in rows:
    r["vs_clustered"] = r["median_epoch_s"] / base
print(f"# {spec}, GCN 3x256, CPU backend; {machine}")
print(f"# /proc/loadavg before: {lb}; after: {la}")
print(f"{'order':<10} {'--reorder':<9} {'applied':<8} {'epochs':>6} {'median epoch s':>15} {'vs clustered':>13} "
      f"{'reorder s':>10}  tile reuse (input -> trained)")
for r in rows:
    t = f"{r['tile_reuse'][0]:.1f} -> {r['tile_reuse'][1]:.1f}" if r["tile_reuse"] else ""
    print(f"{r['order']:<10} {r['reorder']:<9} {r['applied']:<8} {r['epochs']:>6} {r['median_epoch_s']:>15.3f} "
          f"{r['vs_clustered']:>12.2f}x {r['reorder_setup_s']:>10.2f}  {t}")
json.dump(dict(spec=spec, machine=machine, loadavg_before=lb, loadavg_after=la, rows=rows, checks_passed=ok),
          open(f"{outdir}/bench_reorder.json", "w"), indent=1)
sys.exit(0 if ok else 1)
PY
