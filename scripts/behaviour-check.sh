#!/usr/bin/env bash
# Behaviour check for refactors: runs a fixed set of trainings with two builds of
# `capgnn` (before and after a change) and compares their metrics files and
# checkpoints. Metrics must be identical byte for byte once the fields that hold
# timings or memory readings are removed; checkpoints must be identical whole. A field
# that only AFTER writes (a new metric or setting) is listed and left out of the
# comparison; a field that AFTER no longer writes is a difference.
#
#   scripts/behaviour-check.sh BEFORE/bin/capgnn AFTER/bin/capgnn [OUTDIR]
#
# The set: 1 rank and `mpirun -np 2|4`; GCN and GraphSAGE; cora (from
# ../shared/datasets, skipped with a note when absent) and synth:small; and a
# checkpoint + resume on 1 and 2 ranks. CPU backend, one thread per rank, so that
# every run is deterministic. Exit status 0 when everything matches, 1 otherwise.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
before=$(realpath "$1"); after=$(realpath "$2")
out=${3:-$(mktemp -d /tmp/behaviour-check.XXXXXX)}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
data=${CAPGNN_TEST_DATASETS:-$root/../shared/datasets}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export CAPGNN_LOG_LEVEL=warn

graphs=("synth:small")
[ -f "$data/cora.cgr" ] && graphs+=("$data/cora.cgr") || echo "note: $data/cora.cgr absent; cora runs skipped"

# run NAME NP ARGS...: one training with each binary; metrics go to OUT/{before,after}/NAME.jsonl
run() {
  local name=$1 np=$2; shift 2
  for side in before after; do
    local bin=$before; [ $side = after ] && bin=$after
    mkdir -p "$out/$side"
    local launch=(); [ "$np" -gt 1 ] && launch=(mpirun -np "$np")
    (cd "$out/$side" && "${launch[@]}" "$bin" --device cpu --threads 1 --quiet --no-part-cache \
       --metrics "$name.jsonl" "$@" >"$name.log" 2>&1) || { echo "FAIL: $side $name exited $?"; cat "$out/$side/$name.log"; return 1; }
  done
}

for g in "${graphs[@]}"; do
  gname=$(basename "$g" .cgr); gname=${gname//:/_}
  for model in gcn sage; do
    for np in 1 2 4; do
      run "${gname}_${model}_np$np" "$np" --graph "$g" --model "$model" --epochs 20 --hidden 32 --layers 3
    done
  done
done
# checkpoint + resume: 5 epochs, then continue to 12 from the checkpoint
for np in 1 2; do
  run "ckpt_np$np" "$np" --graph synth:small --model sage --layers 3 --epochs 5 --checkpoint "ckpt_np$np.ckpt" --checkpoint-every 2
  run "ckpt_np$np" "$np" --graph synth:small --model sage --layers 3 --epochs 12 --checkpoint "ckpt_np$np.ckpt" --resume "ckpt_np$np.ckpt"
done

# Compare: drop what measures time or memory, keep everything else in file order.
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
# a time is any field named *_s (also inside per_rank's entries and the rank_*_s lists)
volatile = {"peak_rss_bytes"}
def is_volatile(k):
    return k.endswith("_s") or k in volatile
def stable(o):  # o without its times and memory readings, at every depth
    if isinstance(o, dict):
        return {k: stable(v) for k, v in o.items() if not is_volatile(k)}
    if isinstance(o, list):
        return [stable(v) for v in o]
    return o
bad = 0; n = 0; new_keys = set()
for name in sorted(os.listdir(os.path.join(out, "before"))):
    a, b = (os.path.join(out, s, name) for s in ("before", "after"))
    if name.endswith(".jsonl"):
        recs = [[json.loads(l) for l in open(p)] for p in (a, b)]
        for ra, rb in zip(*recs):  # fields only AFTER writes: listed, not compared
            new_keys |= {k for k in set(rb) - set(ra) if not is_volatile(k)}
        rows = [[json.dumps(stable({k: v for k, v in r.items() if k not in new_keys}))
                 for r in side] for side in recs]
        same = rows[0] == rows[1]
    elif name.endswith(".ckpt"):
        same = open(a, "rb").read() == open(b, "rb").read()
    else:
        continue
    n += 1
    print(("same     " if same else "DIFFERENT"), name)
    bad += not same
if new_keys:
    print("fields only AFTER writes (not compared): " + ", ".join(sorted(new_keys)))
print(f"{n} files compared, {bad} different")
sys.exit(1 if bad or n == 0 else 0)
PY
