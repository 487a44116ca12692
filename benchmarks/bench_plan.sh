#!/usr/bin/env bash
# benchmarks/bench_plan.sh — `capgnn plan` against training measured on this machine
# (issue #17, item 4).
#
# 1. Profiles the machine: `capgnn profile --device cpu --threads 1` on 4 ranks as 2
#    emulated nodes (so its link matrix has pairs within and between nodes), and once
#    more for every other layout of ranks and nodes the configurations use (P > 1), whose
#    profile each plan of that layout takes (its gradient all-reduce curve is measured on
#    the job's own ranks and nodes; since 2026-11-29 afternoon, before which the 1-node
#    configurations' plans priced their all-reduce as a ring from the links' latencies).
# 2. For each configuration (graph, P, nodes, cache): trains with the CPU backend, one
#    thread per rank (`mpiexec`, ranks bound to cores round-robin, CAPGNN_EMULATE_NODES for 2 nodes), METIS
#    from a partition cache, and takes the medians over epochs 2..E of the metrics'
#    epoch_s, compute_max_s (the slowest rank's compute) and comm_s (rank 0's, waiting for
#    peers included); then runs `capgnn plan` for the same job with that profile's links
#    and cores and compute rates measured at the model's shapes (--measure-rates; same
#    partition cache: the same owners). With -r R each repeat trains and then plans (its
#    rates measured right after its run, under the same machine state), and the figures
#    compared are the medians over the repeats of each repeat's measured medians and of
#    each repeat's plan: the machine's speed moves by 20-30 % from minute to minute here,
#    both sides of one repeat move with it, and a median of three is less at its mercy
#    than one pair. Compared:
#      epoch    plan epoch_s (the slowest rank's compute + communication)
#      compute  the largest compute_s over the plan's ranks
#      comm     rank 0's epoch - compute in the plan (its communication and its wait)
#    error = (predicted - measured) / measured. The counted bytes (halo_bytes,
#    inter_node_bytes, allreduce_bytes of epoch 2) must equal the plan's exactly.
# 3. Fails (exit 1) when an epoch or compute prediction misses by more than the tolerance
#    (-t, default 0.20), or a comm prediction does where comm is at least a fifth of the
#    measured epoch (below that its error is an error on a few percent of the epoch), or
#    a byte count differs. The plan from the profile's own summary rates (MM at rows x 256
#    x 256, SpMM at width 256, measured once, medians) is printed beside it, not gated.
# Cores: 4 ranks of 1 thread on a 2-core machine share the cores. Every mpiexec binds
# the ranks round-robin to the cores (--map-by core:OVERSUBSCRIBE --bind-to
# core:overload-allowed: ranks 0 and 2 on core 0, 1 and 3 on core 1), and the plan
# models exactly that with the profile's host cores: a rank's compute is its core's
# ranks' summed compute (README, "capgnn plan"). Unbound, the ranks stay on whichever
# core they started on under the real-time class (a rank waiting in MPI spins with
# sched_yield, which hands its core only to a rank queued on the same core), so 3 of
# them can end up sharing one core while the 4th spins alone on the other: the epoch
# then changes from run to run by up to 1.5x. On a machine shared with other jobs every
# measured time also contains their load: /proc/loadavg is printed before and after.
#
# usage: benchmarks/bench_plan.sh [-c CAPGNN] [-C CONFIGS] [-r REPEATS] [-q MAXWAIT]
#                                 [-t TOLERANCE] [-o OUTDIR]
#   CONFIGS: space-separated GRAPH:P:NODES:CACHE items, GRAPH cora or reddit
#   (synth:reddit:scale=0.05), CACHE none or jaca; default: P = 1, 2, 4 on one node and
#   4 on 2 nodes, with and without the cache, on both graphs. cora trains GCN 2 x 16 for
#   300 epochs (configs/cora.ini's model; 40 until 2026-11-29, when its epochs became
#   0.3-0.7 ms and 40 of them 20-30 ms of training, at the mercy of one hiccup of the
#   host), reddit GCN 3 x 64 for 10. Needs
#   CAPGNN_DATA (cora.cgr). Outputs: OUTDIR (default results/bench_plan): the profile,
#   metrics, plans, bench_plan.json.
set -euo pipefail

capgnn=build/bin/capgnn
configs="cora:1:1:none cora:2:1:none cora:4:1:none cora:4:2:none cora:4:2:jaca \
reddit:1:1:none reddit:2:1:none reddit:4:1:none reddit:4:2:none reddit:4:2:jaca"
repeats=1
maxwait=0
tol=0.20
outdir=results/bench_plan
while getopts "c:C:r:q:t:o:h" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    C) configs=$OPTARG ;;
    r) repeats=$OPTARG ;;
    q) maxwait=$OPTARG ;;
    t) tol=$OPTARG ;;
    o) outdir=$OPTARG ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2 ;;
  esac
done
[ -x "$capgnn" ] || { echo "bench_plan.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
mpiexec=${MPIEXEC:-mpiexec}
bind=(--map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$outdir/cache"
. "$(dirname "$0")/wait_idle.sh"
# under chrt -r: a 4 ms round-robin quantum, as bench_dist.sh (wait_idle.sh says why; a
# rank sharing a core otherwise waits up to 100 ms for a preempted peer)
rr_timeslice 4
echo "loadavg before: $(cat /proc/loadavg)" | tee "$outdir/loadavg.txt"
echo "scheduling: $(chrt -p $$ | sed -n 's/.*scheduling policy: *//p'), round-robin quantum $(cat /proc/sys/kernel/sched_rr_timeslice_ms 2>/dev/null || echo ?) ms" | tee -a "$outdir/loadavg.txt"

# profile_run P N OUT: `capgnn profile` on P ranks as N emulated nodes, bound as the runs
profile_run() {
  echo "profile: CAPGNN_EMULATE_NODES=$2 $mpiexec -n $1 ${bind[*]} $capgnn profile --device cpu --threads 1 --quick" >&2
  CAPGNN_EMULATE_NODES=$2 "$mpiexec" -n "$1" "${bind[@]}" -x CAPGNN_EMULATE_NODES "$capgnn" profile --device cpu \
    --threads 1 --quick --cache "$outdir/cache" --json "$3" > "${3%.json}.txt" 2>&1 ||
    { cat "${3%.json}.txt" >&2; echo "bench_plan.sh: profile failed" >&2; exit 1; }
}
profile="$outdir/profile.json"
profile_run 4 2 "$profile"
# and one per other layout of the configurations (P > 1 ranks on N nodes): the gradient
# all-reduce's curve is measured on the profile's own ranks and nodes, and `capgnn plan`
# takes it only from a profile of the job's layout (else it prices a ring from the links'
# latencies: on 4 ranks of one node here 21 us, where a step's all-reduce takes ~150)
declare -A layout_profile=([4:2]="$profile")
for c in $configs; do
  IFS=: read -r _ p n _ <<< "$c"
  [ "$p" -gt 1 ] && [ -z "${layout_profile[$p:$n]:-}" ] || continue
  layout_profile[$p:$n]="$outdir/profile_p${p}_n$n.json"
  profile_run "$p" "$n" "${layout_profile[$p:$n]}"
done

: > "$outdir/runs.tsv"
for c in $configs; do
  IFS=: read -r gname p n cache <<< "$c"
  case $gname in
    cora) graph=cora; model=(--layers 2 --hidden 16); epochs=300 ;;
    reddit) graph="synth:reddit:scale=0.05"; model=(--layers 3 --hidden 64); epochs=10 ;;
    *) echo "bench_plan.sh: unknown graph '$gname' in '$c'" >&2; exit 2 ;;
  esac
  cflags=(); [ "$cache" = none ] || cflags=(--cache-policy "$cache" --cache-host-mb 0 --cache-device-mb 0)
  tag="${gname}_p${p}_n${n}_${cache}"
  plan=("$capgnn" plan --graph "$graph" --parts "$p" --nodes "$n" --hosts 1 --profile "${layout_profile[$p:$n]:-$profile}" "${model[@]}"
        --part-cache "$outdir/cache" --cache-policy "$cache" --quiet)
  for rep in $(seq 1 "$repeats"); do
    met="$outdir/metrics_${tag}_r$rep.jsonl"
    cmd=(env CAPGNN_EMULATE_NODES="$n" "$mpiexec" -n "$p" "${bind[@]}" -x CAPGNN_EMULATE_NODES "$capgnn"
         --graph "$graph" --model gcn "${model[@]}" --epochs "$epochs" --eval-every 100000 --device cpu
         --threads 1 --quiet --partition metis --part-seed 1 --part-cache "$outdir/cache" "${cflags[@]}"
         --metrics "$met")
    echo "$tag (run $rep): ${cmd[*]}" >&2
    wait_idle "$maxwait"
    "${cmd[@]}" > "$outdir/log_${tag}_r$rep.txt" 2>&1 ||
      { cat "$outdir/log_${tag}_r$rep.txt" >&2; echo "bench_plan.sh: $tag failed" >&2; exit 1; }
    "${plan[@]}" --measure-rates --json "$outdir/plan_${tag}_r$rep.json" > "$outdir/plan_${tag}_r$rep.txt" 2>&1 ||
      { cat "$outdir/plan_${tag}_r$rep.txt" >&2; exit 1; }
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tag" "$gname" "$p" "$n" "$cache" "$met" "${cmd[*]}" \
      "$outdir/plan_${tag}_r$rep.json" >> "$outdir/runs.tsv"
  done
  "${plan[@]}" --json "$outdir/plan_$tag.profile_rates.json" > "$outdir/plan_$tag.profile_rates.txt" 2>&1 ||
    { cat "$outdir/plan_$tag.profile_rates.txt" >&2; exit 1; }
  printf '%s --measure-rates\n' "${plan[*]}" > "$outdir/plan_$tag.cmd"
done
echo "loadavg after: $(cat /proc/loadavg)" | tee -a "$outdir/loadavg.txt"

machine="$(hostname); $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); $(nproc) cores; \
$($mpiexec --version 2>&1 | head -1)"
python3 - "$outdir" "$machine" "$tol" <<'PY'
import json, statistics, sys
outdir, machine, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
runs = [l.rstrip("\n").split("\t") for l in open(f"{outdir}/runs.tsv") if l.strip()]
tags = []
for r in runs:
    if r[0] not in tags:
        tags.append(r[0])
ok, rows = True, []
def err(pred, meas):
    return (pred - meas) / meas if meas > 0 else (0.0 if pred == 0 else float("inf"))
for tag in tags:
    mine = [r for r in runs if r[0] == tag]
    _, gname, p, n, cache = mine[0][:5]
    which = "cache" if cache != "none" else "plain"
    reps, ep = [], []  # per repeat: its measured medians and its plan's figures
    for r in mine:
        recs = [json.loads(l) for l in open(r[5])]
        e_r = [x for x in recs if not x.get("summary") and x["epoch"] >= 2]
        ep += e_r
        med = lambda k: statistics.median(x[k] for x in e_r)
        pl_r = json.load(open(r[7]))[which]
        reps.append(dict(measured=dict(epoch=med("epoch_s"), compute=med("compute_max_s"), comm=med("comm_s")),
                         predicted=dict(epoch=pl_r["epoch_s"], compute=max(x["compute_s"] for x in pl_r["ranks"]),
                                        comm=pl_r["epoch_s"] - pl_r["ranks"][0]["compute_s"]), plan=pl_r))
    for x in reps:
        x["error"] = {k: err(x["predicted"][k], x["measured"][k]) for k in x["measured"]}
    meas = {k: statistics.median(x["measured"][k] for x in reps) for k in reps[0]["measured"]}
    pred = {k: statistics.median(x["predicted"][k] for x in reps) for k in reps[0]["predicted"]}
    pl = reps[0]["plan"]  # the bytes: the same partition in every repeat
    e = {k: err(pred[k], meas[k]) for k in meas}
    pp = json.load(open(f"{outdir}/plan_{tag}.profile_rates.json"))["cache" if cache != "none" else "plain"]
    pred_profile = pp["epoch_s"]
    bytes_ok = True
    counted = dict(halo_bytes=ep[0]["halo_bytes"], inter_node_bytes=ep[0].get("inter_node_bytes", 0),
                   allreduce_bytes=ep[0]["allreduce_bytes"])
    for k, v in counted.items():
        if int(v) != int(round(pl[k])):
            print(f"FAIL {tag}: {k} counted {int(v)} != planned {pl[k]:.0f}")
            bytes_ok = ok = False
    for k in ("epoch", "compute"):
        if abs(e[k]) > tol:
            print(f"FAIL {tag}: {k} predicted {pred[k]*1e3:.2f} ms, measured {meas[k]*1e3:.2f} ms ({100*e[k]:+.0f} %)")
            ok = False
    gated_comm = meas["comm"] >= 0.2 * meas["epoch"]
    if gated_comm and abs(e["comm"]) > tol:
        print(f"FAIL {tag}: comm predicted {pred['comm']*1e3:.2f} ms, measured {meas['comm']*1e3:.2f} ms "
              f"({100*e['comm']:+.0f} %)")
        ok = False
    rows.append(dict(config=tag, graph=gname, P=int(p), nodes=int(n), cache=cache, epochs=len(ep),
                     measured=meas, predicted=pred, error=e, repeats=[dict(measured=x["measured"],
                     predicted=x["predicted"], error=x["error"]) for x in reps], predicted_epoch_profile_rates=pred_profile,
                     error_epoch_profile_rates=err(pred_profile, meas["epoch"]), comm_gated=gated_comm, bytes=counted,
                     bytes_equal=bytes_ok, oversubscription=max(x["oversubscription"] for x in pl["ranks"]),
                     train_command=mine[0][6], plan_command=open(f"{outdir}/plan_{tag}.cmd").read().strip()))
print(f"machine: {machine}")
print(f"rates: {json.load(open(runs[0][7]))['rates']['source']}; links and cores: the profile "
      f"(last column: the profile's own summary rates, not gated)")
hdr = (f"{'config':<22} {'ovs':>4} {'epoch ms':>17} {'err':>6} {'compute ms':>17} {'err':>6} "
       f"{'comm ms':>15} {'err':>6} {'bytes':>5} {'profile rates: epoch':>21}")
print(hdr)
print(f"{'':<22} {'':>4} {'pred / meas':>17} {'':>6} {'pred / meas':>17} {'':>6} {'pred / meas':>15}")
print("-" * len(hdr))
for r in rows:
    m, p, e = r["measured"], r["predicted"], r["error"]
    print(f"{r['config']:<22} {r['oversubscription']:>4.1f} {p['epoch']*1e3:>8.2f} /{m['epoch']*1e3:>8.2f} "
          f"{100*e['epoch']:>+5.0f}% {p['compute']*1e3:>8.2f} /{m['compute']*1e3:>8.2f} {100*e['compute']:>+5.0f}% "
          f"{p['comm']*1e3:>7.2f} /{m['comm']*1e3:>7.2f} {100*e['comm']:>+5.0f}%{'' if r['comm_gated'] else '*'} "
          f"{'=' if r['bytes_equal'] else 'NO':>5} {r['predicted_epoch_profile_rates']*1e3:>11.2f} "
          f"{100*r['error_epoch_profile_rates']:>+7.0f}%")
print(f"medians over epochs 2..E (with {len(reps)} repeats: the median over them of each repeat's, measured and planned alike); "
      "compute = the slowest rank's; comm = rank 0's (waiting included); "
      "* comm under a fifth of the epoch: not gated; bytes: halo, inter-node and all-reduce bytes counted == planned")
if any(len(r["repeats"]) > 1 for r in rows):
    print("each repeat alone (its plan against its run), error of epoch / compute / comm:")
    for r in rows:
        print(f"  {r['config']:<22} " + "  ".join(
            "/".join(f"{100*x['error'][k]:+.0f}%" for k in ("epoch", "compute", "comm")) for x in r["repeats"]))
print(f"tolerance {100*tol:.0f} %: " + ("all predictions within it" if ok else "MISSED"))
json.dump(dict(machine=machine, tolerance=tol, rows=rows, passed=ok,
               loadavg=open(f"{outdir}/loadavg.txt").read().splitlines()),
          open(f"{outdir}/bench_plan.json", "w"), indent=1)
sys.exit(0 if ok else 1)
PY
