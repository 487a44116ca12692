#!/usr/bin/env bash
# benchmarks/bench_cache.sh — the halo cache (JACA) against the exact exchange: bytes
# saved, epoch time and accuracy, over a grid of (policy, capacity, staleness S,
# gradient staleness G), P = 2 and 4 ranks, several seeds.
#
# Every run is `capgnn` under mpiexec (--oversubscribe, 1 thread per rank) on 2
# emulated nodes (CAPGNN_EMULATE_NODES=2: P = 2 is one rank per node, P = 4 two ranks
# per node), METIS partitions with --part-seed 1 (the same partition for every setting
# and seed). Per (graph, P, setting) the script reports:
#   halo bytes/epoch  the metrics' halo_bytes (bytes sent through MPI: forward rows and
#                     returned gradients, summed over the ranks), mean over the epochs
#                     after the first (staleness refreshes rows by phase, so epochs
#                     differ), and the fraction saved against the exact run (no cache)
#   epoch ms          median over the seeds of each run's median_epoch_s
#   test acc          test accuracy at the best validation accuracy (the summary's
#                     test_acc_at_best_val), mean over seeds, and its delta against the
#                     exact run of the same seed (mean of the paired differences, in
#                     points, with the smallest and largest difference)
#   hit rate          the cache's cache_hit_rate (hits / lookups over the run), Belady's
#                     MIN on the same reads and slots (cache_oracle_hit_rate) and the
#                     policy's hit rate on MIN's window over MIN's (policy_hit_rate /
#                     oracle_hit_rate; adaptive mode's drift skips are hits of the run,
#                     not of that window, so its run hit rate can exceed MIN)
# Settings with S = G = 0 are exact by construction; the script checks it: their test
# accuracy (and best epoch) must equal the exact run's of the same seed, and every
# setting's halo bytes must not exceed the exact run's, and no row may be older than S
# (age_max) nor a gradient older than G. It fails (exit 1) when a check fails.
# Settings at S = G = 0 other than the first run one seed only, with --epochs 5 for
# the policy rows (their bytes and hit rates do not depend on the seed or epoch).
#
# usage: benchmarks/bench_cache.sh [-c CAPGNN] [-o OUTDIR] [-g "cora reddit"] [-p "2 4"]
#                                  [-s "1 2 3 4"] [-S "1 2 3"] [-A "SETTING ..."] [-G]
#                                  [-E EPOCHS] [-X] [-q]
#   -g  graphs: cora (configs/cora.ini: GCN 2 x 16, 200 epochs, $CAPGNN_DATA/cora.cgr),
#       citeseer (configs/citeseer.ini: the same GCN setup, $CAPGNN_DATA/citeseer.cgr;
#       both stop early by Kipf & Welling's window rule), reddit (synth:reddit:scale=0.05,
#       11,648 vertices, 5.7M edges, GCN 3 x 64, 60 epochs, evaluated every 5) and
#       reddit0.1 (synth:reddit:scale=0.1, 23,297 vertices, 11.4M edges, the same GCN,
#       -E epochs, evaluated every 5); the synthetic graphs are generated once into OUTDIR
#   -s  seeds of cora and citeseer, -S seeds of reddit and reddit0.1; -q one seed, fewer
#       settings (a smoke run)
#   -E  epochs of reddit0.1 (default 100: where the exact run's validation accuracy stops
#       rising, README "Halo cache: bytes against accuracy")
#   -A  only these approximate settings, by name: POLICY-cCAPACITY-[aEPS-]sS-[gaGEPS-]gG[-wE]:
#       POLICY-cCAPACITY-sS-gG (--staleness S --grad-staleness G); aEPS- before sS makes
#       the rows adaptive (--staleness adaptive:EPS:S), gaGEPS- before gG the gradients
#       (--grad-staleness adaptive:GEPS:G); e.g. "jaca-c1-s9-g9 jaca-c1-a0.01-s10-g9
#       jaca-c1-a1-s10-ga0.1-g10"; a name not in approx_settings below is run from what
#       it says; a suffix -wE adds --cache-warmup E (the cache off, exact exchange, for
#       the first E epochs), e.g. jaca-c1-s10-g10-w20, and then a suffix -bB (4, 8, 16)
#       adds --halo-bits B (coded halo rows), e.g. jaca-c1-s0-g0-b4
#   -X  no exact-cache rows (S = G = 0 at each policy and capacity) besides those named
#       in -A: for graphs whose every run is long (reddit0.1)
#   -G  the grid of issue 13 instead of the settings below: policy jaca, lru, fifo x
#       staleness S 0, 1, 2, 5, 10 (gradient staleness G = S) and adaptive (adaptive:1:10
#       with G 9: the one EPS that skips rows under dropout, README "Adaptive staleness")
#       x capacity 1, 0.5, 0.1; seeds 1-3 unless -s says otherwise, P = 4 unless -p
#       does; by priority (jaca at capacity 1 at every seed, then below capacity 1 at
#       the first seed S = G = 0 and 10, then the other S, then lru and fifo at capacity
#       1, then the other seeds below capacity 1), so that a partial run has the most
#       telling runs.
#       Every setting runs every seed and every epoch, except where the result is
#       known from another run and checked against it: S = G = 0 runs the first seed only
#       (it must equal the exact run bit for bit), and lru and fifo at capacity 1 (every
#       halo row fits, nothing is evicted) run the first seed only and must equal jaca's
#       run of the same setting bit for bit (loss, accuracy, bytes, hits).
#   Runs whose metrics file already holds a summary are not run again (delete OUTDIR to
#   start over). Outputs: OUTDIR/runs/*.jsonl and logs, OUTDIR/bench_cache.json (every
#   run and the table's numbers) and OUTDIR/bench_cache.md (the table and, per graph and
#   P, the settings no other setting beats on both bytes saved and accuracy delta).
set -euo pipefail

capgnn=build/bin/capgnn
outdir=results/bench_cache
graphs="cora reddit"
ranks="2 4"
cora_seeds="1 2 3 4"
reddit_seeds="1 2 3"
quick=0
only=""
grid=0
reddit01_epochs=100
ranks_given=0
no_exact_cache=0
cora_seeds_given=0
while getopts "c:o:g:p:s:S:A:E:GXqh" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    o) outdir=$OPTARG ;;
    g) graphs=$OPTARG ;;
    p) ranks=$OPTARG; ranks_given=1 ;;
    s) cora_seeds=$OPTARG; cora_seeds_given=1 ;;
    S) reddit_seeds=$OPTARG ;;
    A) only=$OPTARG ;;
    E) reddit01_epochs=$OPTARG ;;
    G) grid=1 ;;
    X) no_exact_cache=1 ;;
    q) quick=1 ;;
    *) sed -n '2,59p' "$0"; exit 2 ;;
  esac
done
[ -x "$capgnn" ] || { echo "bench_cache.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
mpiexec=${MPIEXEC:-mpiexec}
mkdir -p "$outdir/runs" "$outdir/part-cache"
if [ "$grid" = 1 ]; then
  [ "$ranks_given" = 1 ] || ranks=4
  [ "$cora_seeds_given" = 1 ] || cora_seeds="1 2 3"
fi
if [ "$quick" = 1 ]; then cora_seeds=1; reddit_seeds=1; fi

# setting = name policy capacity S G [epochs override]; S may be adaptive:EPS:S, G
# adaptive:EPS:G
approx_settings=(
  "jaca-c1-a0.01-s10-g0 jaca 1 adaptive:0.01:10 0"
  "jaca-c1-a0.01-s10-g9 jaca 1 adaptive:0.01:10 9"
  "jaca-c1-a0.05-s10-g9 jaca 1 adaptive:0.05:10 9"
  "jaca-c1-a0.1-s20-g19 jaca 1 adaptive:0.1:20 19"
  "jaca-c1-s1-g1 jaca 1 1 1"
  "jaca-c1-s3-g3 jaca 1 3 3"
  "jaca-c1-s9-g9 jaca 1 9 9"
  "jaca-c1-s19-g19 jaca 1 19 19"
  "jaca-c1-s9-g0 jaca 1 9 0"
  "jaca-c1-s0-g9 jaca 1 0 9"
  "jaca-c1-s1-g0 jaca 1 1 0"
  "jaca-c1-s0-g1 jaca 1 0 1"
  "jaca-c0.5-s9-g9 jaca 0.5 9 9"
  "lru-c0.5-s9-g9 lru 0.5 9 9"
  "fifo-c0.5-s9-g9 fifo 0.5 9 9"
  "jaca-c0.2-s9-g9 jaca 0.2 9 9"
)
exact_cache_settings=(  # one seed; the first runs every epoch (the equality check)
  "jaca-c1-s0-g0 jaca 1 0 0"
  "jaca-c0.5-s0-g0 jaca 0.5 0 0 5"
  "lru-c0.5-s0-g0 lru 0.5 0 0 5"
  "fifo-c0.5-s0-g0 fifo 0.5 0 0 5"
  "jaca-c0.2-s0-g0 jaca 0.2 0 0 5"
  "lru-c0.2-s0-g0 lru 0.2 0 0 5"
  "fifo-c0.2-s0-g0 fifo 0.2 0 0 5"
)
# A setting from its name (-A): POLICY-cCAP-[aEPS-]sS-[gaGEPS-]gG[-wE][-bB] -> "name policy
# cap S G" (the warm-up and --halo-bits B are read from the name when the run is made).
setting_from_name() {
  local re='^(jaca|lru|fifo)-c([0-9.]+)-(a([0-9.eE+-]+)-)?s([0-9]+)-(ga([0-9.eE+-]+)-)?g([0-9]+)(-w[0-9]+)?(-b(4|8|16))?$'
  [[ $1 =~ $re ]] ||
    { echo "bench_cache.sh: setting '$1': expected POLICY-cCAP-[aEPS-]sS-[gaGEPS-]gG[-wE][-b4|8|16]" >&2; exit 2; }
  local s=${BASH_REMATCH[5]} gs=${BASH_REMATCH[8]}
  [ -n "${BASH_REMATCH[3]}" ] && s="adaptive:${BASH_REMATCH[4]}:$s"
  [ -n "${BASH_REMATCH[6]}" ] && gs="adaptive:${BASH_REMATCH[7]}:$gs"
  echo "$1 ${BASH_REMATCH[1]} ${BASH_REMATCH[2]} $s $gs"
}
if [ -n "$only" ]; then # every name asked for, those not listed from their name
  for name in $only; do
    found=0
    for st in "${approx_settings[@]}"; do [ "${st%% *}" = "$name" ] && found=1; done
    [ "$found" = 1 ] || approx_settings+=("$(setting_from_name "$name")")
  done
fi
if [ "$grid" = 1 ]; then # issue 13's grid: the S = G = 0 settings go with the exact ones
  approx_settings=()
  exact_cache_settings=()
  for pol in jaca lru fifo; do
    for cap in 1 0.5 0.1; do
      exact_cache_settings+=("$pol-c$cap-s0-g0 $pol $cap 0 0")
      for s in 1 2 5 10; do approx_settings+=("$pol-c$cap-s$s-g$s $pol $cap $s $s"); done
      approx_settings+=("$pol-c$cap-a1-s10-g9 $pol $cap adaptive:1:10 9")
    done
  done
fi
[ "$no_exact_cache" = 1 ] && exact_cache_settings=()
if [ "$quick" = 1 ]; then
  approx_settings=("jaca-c1-s9-g9 jaca 1 9 9")
  exact_cache_settings=("jaca-c1-s0-g0 jaca 1 0 0")
fi

graph_args() { # graph -> the run's options
  case $1 in
    cora) echo "--config $here/configs/cora.ini --graph cora" ;;
    citeseer)
      if [ -f "$here/configs/citeseer.ini" ]; then echo "--config $here/configs/citeseer.ini --graph citeseer"
      else echo "--config $here/configs/cora.ini --graph citeseer"; fi ;;
    reddit)
      local f="$outdir/reddit-0.05.cgr"
      [ -f "$f" ] || "$capgnn" gen synth:reddit:scale=0.05 --output "$f" --quiet >&2
      echo "--graph $f --model gcn --layers 3 --hidden 64 --dropout 0.5 --lr 0.01 --epochs 60 --eval-every 5" ;;
    reddit0.1)
      local f="$outdir/reddit-0.1.cgr"
      [ -f "$f" ] || "$capgnn" gen synth:reddit:scale=0.1 --output "$f" --quiet >&2
      echo "--graph $f --model gcn --layers 3 --hidden 64 --dropout 0.5 --lr 0.01 --epochs $reddit01_epochs --eval-every 5" ;;
    *) echo "bench_cache.sh: unknown graph '$1' (expected cora, citeseer, reddit or reddit0.1)" >&2; exit 2 ;;
  esac
}

cmds_file="$outdir/commands.txt"
: > "$cmds_file"
run_one() { # graph P name policy capacity S G seed [epochs]
  local g=$1 p=$2 name=$3 pol=$4 cap=$5 s=$6 gs=$7 seed=$8 ep=${9:-}
  local tag="${g}_p${p}_${name}_seed${seed}"
  local m="$outdir/runs/$tag.jsonl"
  local cmd=("$mpiexec" -n "$p" --oversubscribe --allow-run-as-root "$capgnn" $(graph_args "$g")
             --device cpu --threads 1 --quiet --seed "$seed" --partition metis --part-seed 1
             --part-cache "$outdir/part-cache" --metrics "$m" --force --layer0-halo local)
  [ -n "$ep" ] && cmd+=(--epochs "$ep")
  [ "$pol" != none ] && cmd+=(--cache-policy "$pol" --cache-capacity "$cap" --staleness "$s" --grad-staleness "$gs")
  [[ $name =~ -w([0-9]+)(-b[0-9]+)?$ ]] && cmd+=(--cache-warmup "${BASH_REMATCH[1]}")
  [[ $name =~ -b([0-9]+)$ ]] && cmd+=(--halo-bits "${BASH_REMATCH[1]}")
  echo "CAPGNN_EMULATE_NODES=2 ${cmd[*]}" >> "$cmds_file"
  if [ -f "$m" ] && grep -q '"summary":true' "$m"; then return 0; fi
  echo "$tag" >&2
  CAPGNN_EMULATE_NODES=2 "${cmd[@]}" > "$outdir/runs/$tag.log" 2>&1 ||
    { cat "$outdir/runs/$tag.log" >&2; echo "bench_cache.sh: $tag failed" >&2; exit 1; }
}

for g in $graphs; do
  seeds=$cora_seeds; [[ $g == reddit* ]] && seeds=$reddit_seeds
  first=${seeds%% *}
  for p in $ranks; do
    for seed in $seeds; do run_one "$g" "$p" exact none 1 0 0 "$seed"; done
    for st in "${exact_cache_settings[@]}"; do
      [ "$grid" = 1 ] && break
      read -r name pol cap s gs ep <<< "$st"
      run_one "$g" "$p" "$name" "$pol" "$cap" "$s" "$gs" "$first" "$ep"
    done
    if [ "$grid" = 1 ]; then # by priority: a partial grid has the most telling runs
      # 1. jaca at capacity 1, every S at the first seed, then at the other seeds;
      # 2. capacity 0.5 and 0.1, every policy at S = G = 0 and 10, first seed; 3. the
      # other S there; 4. lru and fifo at capacity 1, first seed (checked equal to
      # jaca's); 5. capacity < 1, other seeds. S = G = 0 runs the first seed only.
      for pass in 1 2 3 4 5; do
        for seed in $seeds; do
          for st in "${exact_cache_settings[@]}" "${approx_settings[@]}"; do
            read -r name pol cap s gs <<< "$st"
            zero=0; [ "$s" = 0 ] && [ "$gs" = 0 ] && zero=1
            [ "$zero" = 1 ] && [ "$seed" != "$first" ] && continue
            case $pass in
              1) [ "$pol" = jaca ] && [ "$cap" = 1 ] || continue ;;
              2) [ "$cap" != 1 ] && [ "$seed" = "$first" ] && [ "$s" = "$gs" ] &&
                   { [ "$s" = 0 ] || [ "$s" = 10 ]; } || continue ;;
              3) [ "$cap" != 1 ] && [ "$seed" = "$first" ] && ! { [ "$s" = "$gs" ] &&
                   { [ "$s" = 0 ] || [ "$s" = 10 ]; }; } || continue ;;
              4) [ "$pol" != jaca ] && [ "$cap" = 1 ] && [ "$seed" = "$first" ] || continue ;;
              5) [ "$cap" != 1 ] && [ "$seed" != "$first" ] || continue ;;
            esac
            run_one "$g" "$p" "$name" "$pol" "$cap" "$s" "$gs" "$seed"
          done
        done
      done
      continue
    fi
    for st in "${approx_settings[@]}"; do
      read -r name pol cap s gs <<< "$st"
      if [ -n "$only" ] && [[ " $only " != *" $name "* ]]; then continue; fi
      for seed in $seeds; do run_one "$g" "$p" "$name" "$pol" "$cap" "$s" "$gs" "$seed"; done
    done
  done
done

machine="$(hostname); $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1); $(nproc) cores; \
$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $($mpiexec --version 2>&1 | head -1)"
python3 "$here/benchmarks/bench_cache_report.py" "$outdir" "$machine" "$0 $*" "$graphs" "$ranks"
