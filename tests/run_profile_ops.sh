#!/bin/bash
# CAPGNN_PROFILE_OPS=1 on 2 ranks: the halo exchange's own ops (packing rows: gather_rows,
# scatter_add_rows, "halo_rows") are profiled with the model's. With CAPGNN_EMULATE_SPEED
# as well the exchange runs on the backend under both wrappers (its row moves are not
# slowed), so that run's halo_rows count is the model's alone: the plain profile must
# count more (3bf0567 lost the exchange's ops from every profile).
# usage: run_profile_ops.sh MPIEXEC CAPGNN
mpiexec=$1
capgnn=$2
common=(--graph synth:small --epochs 3 --device cpu --threads 1 --no-part-cache --quiet --layers 2)
calls() { # the halo_rows calls rank 0 reports
  sed -n 's/.*PROFILING rank 0: halo_rows .* in \([0-9]*\) calls.*/\1/p' "$1"
}
timeout -k 5 120 "$mpiexec" --oversubscribe --allow-run-as-root -n 2 -x CAPGNN_PROFILE_OPS=1 \
  "$capgnn" "${common[@]}" >profile_plain.out 2>&1 || { cat profile_plain.out; echo "FAIL: the profiled run"; exit 1; }
timeout -k 5 120 "$mpiexec" --oversubscribe --allow-run-as-root -n 2 -x CAPGNN_PROFILE_OPS=1 -x CAPGNN_EMULATE_SPEED=1 \
  "$capgnn" "${common[@]}" >profile_emu.out 2>&1 || { cat profile_emu.out; echo "FAIL: the profiled, emulated run"; exit 1; }
plain=$(calls profile_plain.out)
model=$(calls profile_emu.out)
echo "halo_rows calls on rank 0: ${plain:-none} profiled, ${model:-none} without the exchange's"
if [ -z "$plain" ] || [ -z "$model" ] || [ "$plain" -le "$model" ]; then
  grep PROFILING profile_plain.out profile_emu.out
  echo "FAIL: the exchange's halo_rows ops are not in the profile"
  exit 1
fi
echo "ok"
