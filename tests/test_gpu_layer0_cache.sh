#!/usr/bin/env bash
# tests/test_gpu_layer0_cache.sh CAPGNN MPIEXEC OUTDIR — --layer0-halo auto with the halo
# cache weighs the device (rt_layer0_exchange_choose): on GPUs a dense layer 0 stays local
# (transforming the halo rows costs a GPU less than sending them beside the cache), on
# the CPU it is exchanged. 2 ranks on the one GPU, synth:small (64 dense features -> 16),
# the metrics summary's layer0_halo_chosen; the CPU run beside it as the contrast. Exit
# 77 (skipped) without a GPU or without CUDA in the build.
set -u
capgnn=$1 mpiexec=$2 out=$3
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; } || { echo "skipped: no GPU"; exit 77; }
for dev in cuda cpu; do
  "$mpiexec" --allow-run-as-root --oversubscribe -n 2 "$capgnn" --graph synth:small --model gcn --layers 2 \
    --hidden 16 --device $dev --threads 1 --no-part-cache --cache-policy jaca --cache-host-mb 0 --cache-device-mb 0 \
    --epochs 2 --metrics $dev.jsonl --quiet >$dev.out 2>$dev.err && continue
  rc=$?
  grep -q "has no CUDA backend" $dev.err && { echo "skipped: no CUDA in this build"; exit 77; }
  echo "FAIL: capgnn --device $dev exited $rc"; cat $dev.err; exit 1
done
python3 - cuda.jsonl cpu.jsonl <<'PY' || exit 1
import json, sys
def summary(path):
    return [r for r in (json.loads(l) for l in open(path)) if r.get("summary")][-1]
g, c = summary(sys.argv[1]), summary(sys.argv[2])
print("cuda:", g["device"], g["layer0_halo_chosen"], " cpu:", c["device"], c["layer0_halo_chosen"])
assert g["device"] == "cuda" and c["device"] == "cpu", (g["device"], c["device"])
assert g["layer0_halo_chosen"] == "local", g["layer0_halo_chosen"]
assert c["layer0_halo_chosen"] == "exchange", c["layer0_halo_chosen"]
PY
echo "PASS"
