#!/usr/bin/env bash
# benchmarks/bench_prune_norm.sh — which normalisation a pruned row should get (issue #16,
# item 3: "choose and document the normalisation of pruned rows by measured accuracy").
#
# For each case, P ranks of emulated speeds (CAPGNN_EMULATE_SPEED) run --partition rapa
# --prune-halo EPS once and write the pruned graph (--prune-write); one rank then trains
# that graph over several seeds twice: normalised by its own degrees (--prune-norm pruned,
# the default: a pruned row renormalised over the neighbours that remain) and by the
# original graph's (--norm-degrees ORIGINAL, what --prune-norm original trains: the
# remaining weights unchanged). Training one rank on the written graph is the P-rank
# training (tests: test_dist_equiv, test_rapa_cli), and it lets both normalisations see
# the same pruned edges (the pruning follows rates measured at start-up, which move
# between runs). The exact graph trains over the same seeds; the table gives the mean
# test accuracy at the best validation epoch, each normalisation's delta against the
# exact one and the paired difference (original - pruned), its standard deviation and
# the seeds on which each won. Accuracy only: nothing here is timed.
#
# usage: benchmarks/bench_prune_norm.sh [-c CAPGNN] [-o OUTDIR] [-q]
#   -q: cora's two-rank case only, 2 seeds (a smoke run). Needs CAPGNN_DATA (cora.cgr).
#   Outputs: OUTDIR (default results/bench_prune_norm): the pruned graphs, metrics,
#   bench_prune_norm.json and the table on stdout.
set -euo pipefail
capgnn=build/bin/capgnn
outdir=results/bench_prune_norm
quick=0
while getopts "c:o:qh" opt; do
  case $opt in
    c) capgnn=$OPTARG ;;
    o) outdir=$OPTARG ;;
    q) quick=1 ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2 ;;
  esac
done
[ -x "$capgnn" ] || { echo "bench_prune_norm.sh: $capgnn is not an executable (build first, or pass -c)" >&2; exit 2; }
if [ -z "${CAPGNN_DATA:-}" ] || [ ! -r "$CAPGNN_DATA/cora.cgr" ]; then
  echo "bench_prune_norm.sh: set CAPGNN_DATA to the folder with cora.cgr" >&2; exit 2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpiexec=${MPIEXEC:-mpiexec}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$outdir"
out=$(cd "$outdir" && pwd)

# name | graph | model options | seeds | cases "SPEEDS:EPS ..."
cora_model="--config $here/configs/cora.ini --threads 1"
reddit_model="--layers 2 --hidden 64 --epochs 100 --threads 2"
if [ "$quick" = 1 ]; then
  graphs=("cora|cora|$cora_model|1,2|1,0.33:0.001")
else
  "$capgnn" gen synth:reddit:scale=0.05 --output "$out/reddit05.cgr" --force > "$out/gen.txt" 2>&1
  graphs=("cora|cora|$cora_model|1,2,3,4,5,6,7,8,9,10|1,0.33:0.001 1,0.5,0.25,0.25:0.01 1,0.5,0.25,0.25:0.001 1,1,0.5,0.5,0.25,0.25,0.25,0.25:0.001"
          "reddit05|$out/reddit05.cgr|$reddit_model|1,2,3,4,5|1,0.5,0.25,0.25:0.01")
fi
: > "$out/cases.tsv"
for entry in "${graphs[@]}"; do
  IFS='|' read -r name graph model seeds cases <<< "$entry"
  # shellcheck disable=SC2086
  "$capgnn" --graph "$graph" $model --seeds "$seeds" --quiet --metrics "$out/${name}_exact.jsonl" --force \
    > "$out/${name}_exact.txt" 2>&1
  for c in $cases; do
    speeds=${c%%:*} eps=${c##*:}
    np=$(tr ',' '\n' <<< "$speeds" | wc -l)
    tag="${name}_np${np}_e${eps}"
    echo "$tag: pruning on $np ranks (speeds $speeds, --prune-halo $eps)" >&2
    # shellcheck disable=SC2086
    CAPGNN_EMULATE_SPEED=$speeds "$mpiexec" --oversubscribe -n "$np" -x CAPGNN_EMULATE_SPEED -x CAPGNN_DATA \
      "$capgnn" --graph "$graph" $model --threads 1 --epochs 2 --partition rapa --prune-halo "$eps" \
      --prune-write "$out/$tag.cgr" --no-part-cache --quiet --metrics "$out/${tag}_prune.jsonl" --force \
      > "$out/${tag}_prune.txt" 2>&1
    # the written features are already normalised: --feat-norm none keeps them
    # shellcheck disable=SC2086
    "$capgnn" --graph "$out/$tag.cgr" $model --feat-norm none --seeds "$seeds" --quiet \
      --metrics "$out/${tag}_own.jsonl" --force > "$out/${tag}_own.txt" 2>&1
    # shellcheck disable=SC2086
    "$capgnn" --graph "$out/$tag.cgr" $model --feat-norm none --norm-degrees "$graph" --seeds "$seeds" --quiet \
      --metrics "$out/${tag}_orig.jsonl" --force > "$out/${tag}_orig.txt" 2>&1
    printf '%s\t%s\t%s\t%s\t%s\n' "$tag" "$name" "$np" "$speeds" "$eps" >> "$out/cases.tsv"
  done
done

python3 - "$out" "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" "$0 $*" <<'PY'
import json, statistics as st, sys
out, commit, invocation = sys.argv[1], sys.argv[2], sys.argv[3]
def accs(path):
    recs = [json.loads(l) for l in open(path)]
    return {x["seed"]: x["test_acc_at_best_val"] for x in recs if x.get("summary")}
rows = []
print("case                      cut edges removed        exact  pruned-own (delta)  original (delta)  "
      "original - own [sd]  wins own/orig")
for line in open(f"{out}/cases.tsv"):
    tag, name, np_, speeds, eps = line.rstrip("\n").split("\t")
    ex, own, orig = (accs(f"{out}/{name}_exact.jsonl"), accs(f"{out}/{tag}_own.jsonl"),
                     accs(f"{out}/{tag}_orig.jsonl"))
    rapa = [json.loads(l) for l in open(f"{out}/{tag}_prune.jsonl")][-1]["rapa"]
    seeds = sorted(set(ex) & set(own) & set(orig))
    d = [orig[s] - own[s] for s in seeds]
    row = dict(case=tag, graph=name, ranks=int(np_), speeds=speeds, prune_eps=float(eps),
               cut_edges=rapa["cut_edges"], pruned_edges=rapa["pruned_edges"], seeds=seeds,
               exact=st.mean(ex[s] for s in seeds), own=st.mean(own[s] for s in seeds),
               original=st.mean(orig[s] for s in seeds), diff=st.mean(d), diff_sd=st.stdev(d) if len(d) > 1 else 0.0,
               own_wins=sum(x < 0 for x in d), original_wins=sum(x > 0 for x in d),
               per_seed=dict(exact=[ex[s] for s in seeds], own=[own[s] for s in seeds],
                             original=[orig[s] for s in seeds]))
    rows.append(row)
    print(f"{tag:24s} {row['pruned_edges']:>9,} of {row['cut_edges']:>9,}  {100*row['exact']:6.2f}  "
          f"{100*row['own']:6.2f} ({100*(row['own']-row['exact']):+.2f})    {100*row['original']:6.2f} "
          f"({100*(row['original']-row['exact']):+.2f})   {100*row['diff']:+6.2f} [{100*row['diff_sd']:.2f}]"
          f"        {row['own_wins']}/{row['original_wins']}")
json.dump(dict(benchmark="bench_prune_norm", commit=commit, command=invocation,
               rows=rows), open(f"{out}/bench_prune_norm.json", "w"), indent=1)
print(f"test accuracy at the best validation epoch, mean over the seeds; JSON: {out}/bench_prune_norm.json")
PY
