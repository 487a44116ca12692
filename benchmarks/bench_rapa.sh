#!/usr/bin/env bash
# benchmarks/bench_rapa.sh — resource-aware partitioning on emulated heterogeneous ranks.
#
# For each graph and each set of rank speeds (CAPGNN_EMULATE_SPEED: rank r's every op
# takes 1/f_r as long, core/ops_emulate.h), trains with
#   metis   equal METIS parts (the baseline: every epoch waits for the slowest rank)
#   rapa    capability-weighted METIS (--partition rapa: rates measured at start-up on
#           every rank's emulated backend, exact)
#   prune   the same plus halo pruning (--prune-halo EPS, default 0.01: approximate, the
#           training of the pruned graph)
# and, without emulation, one rank (1 thread): T1. The ideal epoch of P ranks of speeds
# f_r is T1 / sum(f_r): the work spread in proportion to speed, with nothing lost to
# communication or imbalance. Every rank runs 1 thread (--threads 1).
#
# It checks before it reports: every exact run's per-epoch losses equal the one-rank run's
# within 1e-5 relative (the partition changes no result), else exit 1; a pruned run's
# summary must say it is not exact and how many cut edges it removed.
# Accuracy: cora with configs/cora.ini (200 epochs, evaluation every epoch) on the 4 ranks
# of speeds 1, 0.5, 0.25, 0.25, seeds 1, 2, 3: test accuracy at the best validation epoch
# of rapa (exact) and prune, and their difference.
# Each configuration runs REPEATS times, the methods alternated within a repeat; a run's
# time is its median epoch (epoch_s), a configuration's the median over the repeats.
# Before each run it waits (up to WAIT seconds) until the machine is quiet: at most QUIET
# runnable tasks in /proc/loadavg besides the reader (others' work would be timed too),
# and records the runnable count seen when the run started.
# From the runs' summaries it also reports the cost model: every rank's predicted
# compute against its measured median compute_s, and the predicted epoch (max over the
# ranks of predicted compute + communication) against the measured epoch.
#
# Run under `chrt -r` (how the README's runs are made), the round-robin quantum is set to
# 4 ms for the script (a rank waiting for a preempted peer otherwise waits up to 100 ms).
# Placement (-p): none (default) leaves the ranks unbound; speed binds them to cores by
# speed through a rankfile (greedy: the fastest rank first, each to the core whose ranks'
# speeds sum least; 1, 0.5, 0.25, 0.25 on 2 cores: rank 0 alone on core 0, the others
# on core 1, so that each core's summed speed, the work the weighted split gives it, is
# the same), with Open MPI's mpi_yield_when_idle (a rankfile's ranks are not seen as
# oversubscribed, so a waiting rank would spin its core's whole quantum).
#
# Devices (-d): cpu (default; speeds emulated as above) or cuda: the ranks share one GPU
# under MPS, rank r limited to 100 f_r % of its SMs (--gpu-share 100,50,25,25; the script
# starts an MPS daemon with its pipe and log folders under OUTDIR unless one answers, and
# stops the one it started), GCN 2 x 256 on full synth:reddit for 20 epochs (-g names
# another graph). An SM share is not a speed (a memory-bound SpMM at 25 % of the SMs runs
# faster than 1/4 of its full speed), so on cuda the ideal is measured (-i measured): one
# rank alone at each share f takes T1(f), and the ideal of shares f_r is
# 1 / sum(1 / T1(f_r)), the epoch if the work were split in proportion to the measured
# throughputs (still optimistic: the shares of one GPU also share its memory bandwidth).
# -i nominal (the cpu default) is T1 / sum(f_r); -i measured on the cpu times one
# emulated rank at each speed (a check of the emulation: T1(f) = T1 / f).
#
# usage: benchmarks/bench_rapa.sh [-c CAPGNN] [-r REPEATS] [-o OUTDIR] [-q QUIET] [-w WAIT] [-e EPS] [-g GRAPH] [-s]
#                                 [-p none|speed] [-d cpu|cuda] [-i nominal|measured]
#   defaults: build/bin/capgnn, 3 repeats, results/bench_rapa, QUIET 2, WAIT 60; -g: only the
#   graph named (cora or synth:reddit:scale=0.05; on cuda any graph); -s: a smoke run (cora
#   only, 1 repeat, few epochs). Writes OUTDIR/bench_rapa.json and prints the table.
set -euo pipefail

capgnn=build/bin/capgnn
repeats=3
outdir=results/bench_rapa
quiet=2
smoke=0
prune_eps=0.01
max_wait=60
only=
placement=none
device=cpu
ideal_mode=
while getopts "c:r:o:q:e:w:g:p:d:i:sh" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    r) repeats=$OPTARG ;;
    o) outdir=$OPTARG ;;
    q) quiet=$OPTARG ;;
    s) smoke=1 ;;
    e) prune_eps=$OPTARG ;;
    w) max_wait=$OPTARG ;;
    g) only=$OPTARG ;;
    p) placement=$OPTARG ;;
    d) device=$OPTARG ;;
    i) ideal_mode=$OPTARG ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2 ;;
  esac
done
[ -x "$capgnn" ] || { echo "bench_rapa.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
case $placement in none|speed) ;; *) echo "bench_rapa.sh: -p $placement: expected none or speed" >&2; exit 2 ;; esac
case $device in cpu|cuda) ;; *) echo "bench_rapa.sh: -d $device: expected cpu or cuda" >&2; exit 2 ;; esac
[ -n "$ideal_mode" ] || { [ "$device" = cuda ] && ideal_mode=measured || ideal_mode=nominal; }
case $ideal_mode in nominal|measured) ;; *) echo "bench_rapa.sh: -i $ideal_mode: expected nominal or measured" >&2; exit 2 ;; esac
[ "$device" = cpu ] || [ "$placement" = none ] ||
  { echo "bench_rapa.sh: -p $placement binds ranks to CPU cores: cpu only" >&2; exit 2; }
mpiexec=${MPIEXEC:-mpiexec}
export CAPGNN_DATA=${CAPGNN_DATA:-../shared/datasets} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$outdir/runs"
export CAPGNN_CACHE=$outdir/cache

# graph | model options | epochs
graphs=("cora|--layers 2 --hidden 16|60" "synth:reddit:scale=0.05|--layers 2 --hidden 64|12")
speeds=("1,0.33" "1,0.5,0.25,0.25")
if [ "$device" = cuda ]; then
  graphs=("synth:reddit|--layers 2 --hidden 256|20")
  [ -z "$only" ] || { graphs=("$only|--layers 2 --hidden 256|20"); only=; }
fi
if [ "$smoke" = 1 ]; then
  if [ "$device" = cpu ]; then graphs=("cora|--layers 2 --hidden 16|10"); else graphs=("${graphs[0]%|*}|5"); fi
  repeats=1
fi
if [ -n "$only" ]; then
  kept=()
  for g in "${graphs[@]}"; do [ "${g%%|*}" = "$only" ] && kept+=("$g"); done
  [ ${#kept[@]} -gt 0 ] || { echo "bench_rapa.sh: -g $only: not one of the graphs" >&2; exit 2; }
  graphs=("${kept[@]}")
fi

# under `chrt -r`: a 4 ms round-robin quantum, not the kernel's 100 ms (wait_idle.sh)
. "$(dirname "$0")/wait_idle.sh"
rr_timeslice 4

# cuda: the MPS daemon that --gpu-share needs; started here (and stopped at exit) unless one
# answers already
if [ "$device" = cuda ]; then
  command -v nvidia-cuda-mps-control >/dev/null ||
    { echo "bench_rapa.sh: -d cuda needs nvidia-cuda-mps-control (MPS)" >&2; exit 2; }
  if ! timeout 5 nvidia-cuda-mps-control <<<"get_server_list" >/dev/null 2>&1; then
    mps=$(cd "$outdir" && pwd)/mps
    export CUDA_MPS_PIPE_DIRECTORY=$mps/pipe CUDA_MPS_LOG_DIRECTORY=$mps/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d || { echo "bench_rapa.sh: starting the MPS daemon failed" >&2; exit 1; }
    # (after what rr_timeslice's EXIT trap restores, not instead of it)
    old_trap=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT$//")
    trap "${old_trap:+$old_trap; }echo quit | nvidia-cuda-mps-control" EXIT
    echo "bench_rapa.sh: started an MPS daemon (pipe $CUDA_MPS_PIPE_DIRECTORY)" >&2
  fi
fi

# rank speeds (fractions) as MPS shares (percent of the SMs): 0.33 -> 33
shares_of() { awk -F, '{for (i = 1; i <= NF; i++) printf "%s%d", (i > 1 ? "," : ""), $i * 100 + 0.5}' <<<"$1"; }

wait_quiet() { # prints the load seen when the run starts
  local t=0 r
  while :; do
    r=$(awk '{split($4, a, "/"); print a[1] - 1}' /proc/loadavg)
    if [ "$r" -le "$quiet" ] || [ $t -ge "$max_wait" ]; then echo "$r"; return; fi
    sleep 5; t=$((t + 5))
  done
}

# the mpiexec options placing the ranks of speed list $1, in the array `place`; -p speed:
# a rankfile (greedy by speed over the machine's cores)
place_args() {
  place=(--oversubscribe)
  [ "$placement" = speed ] || return 0
  local rf
  rf="$outdir/rankfile_$(tr ',.' '_p' <<<"$1")"
  python3 - "$1" "$(nproc)" "$(hostname)" > "$rf" <<'PY' || { echo "bench_rapa.sh: writing $rf failed" >&2; exit 1; }
import sys
speeds = [float(x) for x in sys.argv[1].split(",")]
cores, host = int(sys.argv[2]), sys.argv[3]
load = [0.0] * cores
for r in sorted(range(len(speeds)), key=lambda r: -speeds[r]):
    c = min(range(cores), key=lambda c: load[c])
    load[c] += speeds[r]
    print(f"rank {r}={host} slot={c}")
PY
  place=(--rankfile "$rf" --mca mpi_yield_when_idle 1)
}

runs=()
run() { # name graph epochs speeds method model-opts... (speeds: "-" one full-speed rank, "one@F" one rank at F)
  local name=$1 graph=$2 epochs=$3 sp=$4 method=$5; shift 5
  local np=1 env=() place=(--oversubscribe) dev=(--device cpu --threads 1) f=$sp
  [ "${sp#one@}" != "$sp" ] && f=${sp#one@}
  if [ "$f" != "-" ]; then
    np=$(awk -F, '{print NF}' <<<"$f")
    if [ "$device" = cpu ]; then
      env=(-x CAPGNN_EMULATE_SPEED="$f")
      place_args "$f"
    fi
  fi
  [ "$device" = cuda ] && dev=(--device cuda --gpu-share "$(shares_of "${f/-/1}")")
  local cmd=("$mpiexec" -n "$np" "${place[@]}" --allow-run-as-root "${env[@]}" "$capgnn" --graph "$graph" "$@"
             --epochs "$epochs" --eval-every 100000 "${dev[@]}" --quiet --seed 1
             --partition "$method" --part-seed 1 --no-part-cache --metrics "$outdir/runs/$name.jsonl" --force)
  local load
  load=$(wait_quiet)
  echo "[$(date -u +%H:%M:%S), runnable $load] ${cmd[*]}" >&2
  "${cmd[@]}" > "$outdir/runs/$name.log" 2>&1 || { cat "$outdir/runs/$name.log" >&2; echo "bench_rapa.sh: $name failed" >&2; exit 1; }
  runs+=("$name|$graph|$sp|$method|$load|${cmd[*]}")
}

for g in "${graphs[@]}"; do
  IFS='|' read -r graph model epochs <<<"$g"
  tag=$(tr -c 'a-zA-Z0-9\n' '_' <<<"$graph")
  for rep in $(seq 1 "$repeats"); do
    # shellcheck disable=SC2086
    run "${tag}_one_r$rep" "$graph" "$epochs" - metis $model
    if [ "$ideal_mode" = measured ]; then # one rank alone at each speed (share) below full
      for f in $(IFS=,; tr ',' '\n' <<<"${speeds[*]}" | sort -u); do
        [ "$(awk -v f="$f" 'BEGIN{print (f < 1)}')" = 1 ] || continue
        # shellcheck disable=SC2086
        run "${tag}_one_$(tr '.' 'p' <<<"$f")_r$rep" "$graph" "$epochs" "one@$f" metis $model
      done
    fi
    for sp in "${speeds[@]}"; do
      for method in metis rapa prune; do
        extra=()
        m=$method
        [ "$method" = prune ] && { extra=(--prune-halo "$prune_eps"); m=rapa; }
        # shellcheck disable=SC2086
        run "${tag}_$(tr ',.' '_p' <<<"$sp")_${method}_r$rep" "$graph" "$epochs" "$sp" "$m" $model "${extra[@]}"
        runs[-1]=$(sed "s/|rapa|/|$method|/" <<<"${runs[-1]}")
      done
    done
  done
done

# accuracy of pruning against the exact weighted split: cora, 4 ranks, 3 seeds
accs=()
if [ "$smoke" = 0 ] && [ "$device" = cpu ]; then
  for seed in 1 2 3; do
    for method in rapa prune; do
      extra=()
      [ "$method" = prune ] && extra=(--prune-halo "$prune_eps")
      name="acc_cora_${method}_s$seed"
      cmd=("$mpiexec" -n 4 --oversubscribe --allow-run-as-root -x CAPGNN_EMULATE_SPEED=1,0.5,0.25,0.25 "$capgnn"
           --config configs/cora.ini --device cpu --threads 1 --quiet --seed "$seed" --partition rapa
           --part-seed 1 "${extra[@]}" --metrics "$outdir/runs/$name.jsonl" --force)
      echo "[$(date -u +%H:%M:%S)] ${cmd[*]}" >&2
      "${cmd[@]}" > "$outdir/runs/$name.log" 2>&1 || { cat "$outdir/runs/$name.log" >&2; exit 1; }
      accs+=("$name|$method|$seed|${cmd[*]}")
    done
  done
fi

machine="$(hostname); $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); $(nproc) cores; \
$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $($mpiexec --version 2>&1 | head -1)"
[ "$device" = cpu ] || machine="$machine; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

PRUNE_EPS=$prune_eps DEVICE=$device IDEAL=$ideal_mode python3 - "$outdir" "$machine" "$0 $*" "${#runs[@]}" "${runs[@]}" "${accs[@]}" <<'PY'
import json, os, statistics as st, sys
outdir, machine, invocation, nruns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
PRUNE_EPS = float(os.environ["PRUNE_EPS"])
DEVICE, IDEAL = os.environ["DEVICE"], os.environ["IDEAL"]
runs, accs = sys.argv[5:5 + nruns], sys.argv[5 + nruns:]
recs = {}
for r in runs:
    name, graph, sp, method, load, cmd = r.split("|", 5)
    lines = [json.loads(l) for l in open(f"{outdir}/runs/{name}.jsonl")]
    ep = [x for x in lines if not x.get("summary")]
    s = [x for x in lines if x.get("summary")][-1]
    recs[name] = dict(name=name, graph=graph, speeds=sp, method=method, load=int(load), cmd=cmd,
                      losses=[x["loss"] for x in ep], epoch_s=s["median_epoch_s"], summary=s)
ok = True
for n, r in recs.items():  # the check: every exact run trains what one rank trains
    if r["method"] == "prune":
        ra = r["summary"]["rapa"]
        if ra["exact"] != (ra["pruned_edges"] == 0) or abs(ra["prune_eps"] - PRUNE_EPS) > 1e-6:
            print(f"FAIL: {n}: a pruned run's summary says exact {ra['exact']} with {ra['pruned_edges']} edges "
                  f"pruned, eps {ra['prune_eps']}", file=sys.stderr)
            ok = False
        continue
    base = [x for x in recs.values() if x["graph"] == r["graph"] and x["speeds"] == "-"][0]["losses"]
    if len(r["losses"]) != len(base):
        print(f"FAIL: {n}: {len(r['losses'])} epochs logged, the one-rank run {len(base)}", file=sys.stderr)
        ok = False
        continue
    worst = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], base))
    r["loss_rel_err"] = worst
    if worst > 1e-5:
        print(f"FAIL: {n}: losses differ from one rank's by {worst:.2e} relative", file=sys.stderr)
        ok = False
if not ok:
    sys.exit(1)
rows = []
for graph in dict.fromkeys(r["graph"] for r in recs.values()):
    one = [r for r in recs.values() if r["graph"] == graph and r["speeds"] == "-"]
    t1 = st.median(r["epoch_s"] for r in one)
    # one rank alone at speed (share) f: T1(f), measured (-i measured) or T1 / f
    t1f = {1.0: t1}
    for sp in dict.fromkeys(r["speeds"] for r in recs.values() if r["graph"] == graph and r["speeds"].startswith("one@")):
        t1f[float(sp[4:])] = st.median(r["epoch_s"] for r in recs.values()
                                       if r["graph"] == graph and r["speeds"] == sp)
    for sp in dict.fromkeys(r["speeds"] for r in recs.values()
                            if r["graph"] == graph and r["speeds"] != "-" and not r["speeds"].startswith("one@")):
        f = [float(x) for x in sp.split(",")]
        nominal = t1 / sum(f)
        ideal = 1.0 / sum(1.0 / t1f[x] for x in f) if IDEAL == "measured" else nominal
        row = dict(graph=graph, speeds=sp, ranks=len(f), device=DEVICE, ideal_mode=IDEAL, t1_s=t1,
                   t1_runs=[r["epoch_s"] for r in one], ideal_s=ideal, ideal_nominal_s=nominal,
                   t1_at_speed_s={str(x): t1f[x] for x in sorted(set(f))} if IDEAL == "measured" else None)
        for method in ("metis", "rapa", "prune"):
            rs = [r for r in recs.values() if r["graph"] == graph and r["speeds"] == sp and r["method"] == method]
            t = st.median(r["epoch_s"] for r in rs)
            row[method] = dict(epoch_s=t, runs=[r["epoch_s"] for r in rs], vs_ideal=t / ideal,
                               loads=[r["load"] for r in rs], cmd=rs[0]["cmd"],
                               worst_loss_rel_err=max(r.get("loss_rel_err", float("nan")) for r in rs))
            if method == "prune":
                row[method]["pruned_fraction"] = [r["summary"]["rapa"]["pruned_fraction"] for r in rs]
            if method in ("rapa", "prune"):  # the cost model against the measurements, per run
                errs, epoch_errs, shares = [], [], []
                for r in rs:
                    pr = r["summary"]["per_rank"]
                    errs.append([q["predicted_compute_s"] / q["median_compute_s"] - 1 for q in pr])
                    pe = max(q["predicted_lambda_s"] for q in pr)
                    epoch_errs.append(pe / r["epoch_s"] - 1)
                    shares.append([q["target_share"] for q in pr])
                row[method]["compute_pred_rel_err"] = errs
                row[method]["epoch_pred_rel_err"] = epoch_errs
                row[method]["target_shares"] = shares
                row[method]["predicted_compute_ms"] = [[round(q["predicted_compute_s"] * 1e3, 3) for q in r["summary"]["per_rank"]] for r in rs]
                row[method]["measured_compute_ms"] = [[round(q["median_compute_s"] * 1e3, 3) for q in r["summary"]["per_rank"]] for r in rs]
        row["speedup_rapa_vs_metis"] = row["metis"]["epoch_s"] / row["rapa"]["epoch_s"]
        rows.append(row)
acc = []
for a in accs:
    name, method, seed, cmd = a.split("|", 3)
    s = [json.loads(l) for l in open(f"{outdir}/runs/{name}.jsonl") if '"summary"' in l][-1]
    acc.append(dict(method=method, seed=int(seed), test_acc=s["test_acc_at_best_val"], best_val=s["best_val_acc"],
                    pruned_fraction=s["rapa"]["pruned_fraction"], cmd=cmd))
out = dict(benchmark="bench_rapa", machine=machine, device=DEVICE, ideal=IDEAL, command=invocation, rows=rows,
           accuracy=acc)
json.dump(out, open(f"{outdir}/bench_rapa.json", "w"), indent=1)
print(f"machine: {machine}")
print(f"command: {invocation}")
print(f"device: {DEVICE}; ideal: {IDEAL}" + (" (1 / sum over ranks of 1 / T1 at the rank's speed, T1 measured)"
                                             if IDEAL == "measured" else " (T1 / sum of the speeds)"))
print("| graph | speeds | one rank | ideal | equal METIS | weighted METIS (rapa) | rapa / ideal | rapa vs METIS | rapa + pruning (cut edges removed) | predicted compute vs measured, worst rank (rapa) | predicted epoch vs measured (rapa) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    ce = [max(e, key=abs) for e in r["rapa"]["compute_pred_rel_err"]]
    ee = r["rapa"]["epoch_pred_rel_err"]
    pf = st.median(r["prune"]["pruned_fraction"])
    print(f"| {r['graph']} | {r['speeds']} | {r['t1_s']*1e3:.2f} ms | {r['ideal_s']*1e3:.2f} ms | "
          f"{r['metis']['epoch_s']*1e3:.2f} ms | {r['rapa']['epoch_s']*1e3:.2f} ms | {r['rapa']['vs_ideal']:.2f}x | "
          f"{r['speedup_rapa_vs_metis']:.2f}x | {r['prune']['epoch_s']*1e3:.2f} ms ({pf*100:.1f} %) | "
          f"{st.median(ce)*100:+.0f} % | {st.median(ee)*100:+.0f} % |")
for r in rows:
    if r["t1_at_speed_s"]:
        print(f"one rank alone, {r['graph']}: " + ", ".join(
            f"speed {k}: {v * 1e3:.2f} ms ({r['t1_s'] / v:.2f} of full)" for k, v in r["t1_at_speed_s"].items()))
if acc:
    print("\n| seed | test acc, rapa (exact) | test acc, rapa + pruning | delta | cut edges removed |")
    print("|---:|---:|---:|---:|---:|")
    ds = []
    for seed in sorted({a["seed"] for a in acc}):
        e = [a for a in acc if a["seed"] == seed and a["method"] == "rapa"][0]
        p = [a for a in acc if a["seed"] == seed and a["method"] == "prune"][0]
        ds.append(p["test_acc"] - e["test_acc"])
        print(f"| {seed} | {e['test_acc']:.4f} | {p['test_acc']:.4f} | {ds[-1]*100:+.1f} pt | {p['pruned_fraction']*100:.1f} % |")
    print(f"| mean | | | {st.mean(ds)*100:+.2f} pt | |")
PY
