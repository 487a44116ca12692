#!/usr/bin/env bash
# tests/test_cache_age_cli.sh CAPGNN MPIEXEC OUTDIR — the halo cache's age_max and
# grad_age_max in a metrics record are the epoch's oldest row and gradient, not the
# oldest so far: 2 ranks, synth:small, --staleness adaptive:1000:2 --grad-staleness
# adaptive:1000:2 (nothing drifts by 1000, so rows and gradients are resent only when
# due: the ages rise and fall with the schedule), 8 epochs. Every epoch's maxima are
# within the bound, the summary's are the largest of the epochs', and some epoch's are
# below an earlier epoch's (impossible for a running maximum).
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$mpiexec" --allow-run-as-root --oversubscribe -n 2 "$capgnn" --graph synth:small --model gcn --layers 3 \
  --hidden 16 --device cpu --threads 1 --no-part-cache --layer0-halo local --cache-policy jaca \
  --staleness adaptive:1000:2 --grad-staleness adaptive:1000:2 --epochs 8 --metrics age.jsonl --quiet \
  >run.out 2>run.err || { echo "FAIL: capgnn exited $?"; cat run.err; exit 1; }
python3 - age.jsonl <<'PY' || exit 1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
epochs = [r["cache"] for r in recs if not r.get("summary")]
summary = [r["cache"] for r in recs if r.get("summary")][0]
for key in ("age_max", "grad_age_max"):
    seq = [c[key] for c in epochs]
    print(f"{key} per epoch {seq}, summary {summary[key]}")
    assert len(seq) == 8 and all(0 <= a <= 2 for a in seq), f"{key}: outside [0, 2]: {seq}"
    assert summary[key] == max(seq), f"{key}: summary {summary[key]}, epochs' largest {max(seq)}"
    for layer in range(len(epochs[0].get("layers", []))):
        lseq = [c["layers"][layer][key] for c in epochs]
        assert all(a <= b for a, b in zip(lseq, seq)), f"{key}: layer {layer} {lseq} above the epoch's {seq}"
fall = [e for e in range(1, 8) for key in ("age_max", "grad_age_max")
        if epochs[e][key] < max(c[key] for c in epochs[:e])]
assert fall, "no epoch's maximum is below an earlier one's: a running maximum, not the epoch's"
print("test_cache_age_cli: all checks passed")
PY
