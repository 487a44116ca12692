#!/usr/bin/env bash
# tests/run_shm_small.sh MPIEXEC CAPGNN
# The halo cache's node tier on a host whose shared-memory folder is small (a
# container's 64 MB /dev/shm): Open MPI puts the node segment in a file there
# (--mca osc_sm_backing_directory), which MPI_Win_allocate_shared did not check. A
# segment that did not fit failed on the node's first rank alone while the others
# waited inside the call: the job hung at set-up. Now, on a 1 MiB tmpfs:
#  - a job whose segments cannot fit (a fixed budget) ends within the timeout, exit 1,
#    with an error naming the folder and its free bytes;
#  - with the defaults the node tier is capped to fit and the halo gradients go back
#    through the plain exchange: it trains, says so, and equals the run on /dev/shm;
#  - a node tier capped to fit (gradient staleness, no gradient segment) trains;
#  - the folder set in an MCA parameter file (not in the environment) is the one checked.
# Needs a tmpfs mount (root, a mount namespace that allows it): 77 (skipped) otherwise.
set -u
mpiexec=$1 capgnn=$2
. "$(dirname "$0")/small_tmpfs.sh"
small_tmpfs 1m
shm=$mnt
fail=0
run() { # run LOG FOLDER ARGS...: a 2-rank job with the segment folder FOLDER
  local log=$1 folder=$2; shift 2
  timeout 120 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root --mca osc_sm_backing_directory "$folder" \
    "$capgnn" --graph synth:tiny --epochs 3 --device cpu --threads 1 --no-part-cache --quiet \
    --cache-policy jaca "$@" >"$log" 2>&1
}
# 1. a fixed node-tier budget whose segment does not fit: refused, naming the folder
run "$dir/big.log" "$shm" --hidden 2048 --layers 3 --cache-host-mb 64
rc=$?
if [ $rc -eq 124 ]; then
  echo "FAIL: the job did not end within 120 s (hung at set-up)"; fail=1
elif [ $rc -eq 0 ] || ! grep -q "bytes free" "$dir/big.log" || ! grep -q "$shm" "$dir/big.log"; then
  echo "FAIL: expected exit 1 and an error naming $shm and its free bytes (exit $rc):"; cat "$dir/big.log"; fail=1
else
  echo "ok: segments larger than the folder: exit $rc, $(grep -m1 'bytes free' "$dir/big.log")"
fi
# 2. the defaults: the node tier capped to the folder, the gradients through the plain
# exchange; still exact: the same losses as with the segments in /dev/shm
run "$dir/def.log" "$shm" --hidden 2048 --layers 3 --metrics "$dir/def.jsonl"
rc=$?
run "$dir/ref.log" /dev/shm --hidden 2048 --layers 3 --metrics "$dir/ref.jsonl"
rc2=$?
loss() { grep -o '"loss":[^,]*' "$1"; }
if [ $rc -ne 0 ] || [ $rc2 -ne 0 ] || ! grep -q "plain exchange" "$dir/def.log" ||
   ! grep -q "free space in $shm" "$dir/def.log" || [ "$(loss "$dir/def.jsonl")" != "$(loss "$dir/ref.jsonl")" ] ||
   [ -z "$(loss "$dir/ref.jsonl")" ]; then
  echo "FAIL: the default cache on a small folder should train, say what it did, and equal the run on /dev/shm" \
       "(exit $rc, $rc2):"; cat "$dir/def.log"; loss "$dir/def.jsonl"; loss "$dir/ref.jsonl"; fail=1
else
  echo "ok: the default cache on the small folder trains, exactly: $(grep -m1 'plain exchange' "$dir/def.log")"
fi
# 3. gradient staleness: no node segment for gradients, the node tier alone is in the
# folder; uncapped it would take 89 rows x 2048 x 4 B x 2 layers, ~1.4 MiB
run "$dir/fit.log" "$shm" --hidden 2048 --layers 3 --staleness 1 --grad-staleness 1
rc=$?
if [ $rc -ne 0 ] || ! grep -q "free space in $shm" "$dir/fit.log"; then
  echo "FAIL: a node tier capped to fit the folder should train and say so (exit $rc):"; cat "$dir/fit.log"; fail=1
else
  echo "ok: a node tier capped to the folder trains: $(grep -m1 'free space in' "$dir/fit.log")"
fi
# 4. the folder set in an MCA parameter file, not on the command line: the check reads
# the library's effective value (MPI_T), not just OMPI_MCA_osc_sm_backing_directory
mkdir -p "$dir/home/.openmpi"
echo "osc_sm_backing_directory = $shm" >"$dir/home/.openmpi/mca-params.conf"
HOME="$dir/home" timeout 120 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root \
  "$capgnn" --graph synth:tiny --epochs 3 --device cpu --threads 1 --no-part-cache --quiet \
  --cache-policy jaca --hidden 2048 --layers 3 --cache-host-mb 64 >"$dir/file.log" 2>&1
rc=$?
if [ $rc -eq 124 ]; then
  echo "FAIL: with the folder from an MCA parameter file the job did not end within 120 s"; fail=1
elif [ $rc -eq 0 ] || ! grep -q "$shm has" "$dir/file.log"; then
  echo "FAIL: expected exit 1 and an error naming $shm (set in an MCA parameter file) (exit $rc):"
  cat "$dir/file.log"; fail=1
else
  echo "ok: the folder from an MCA parameter file: exit $rc, $(grep -m1 'bytes free' "$dir/file.log")"
fi
exit $fail
