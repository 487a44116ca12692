#!/usr/bin/env bash
# mpi/tests/run_shm_kill.sh MPIEXEC TEST_SHM
#
# What is left in /dev/shm after a rank is SIGKILLed while it holds a node segment
# (mpi/comm.h, "node shared memory"). test_shm --kill creates a segment on 2 ranks;
# rank 1 prints the segment's file and kills itself; mpirun then ends the job. Once
# mpirun has returned, nothing of that job may remain: not the segment's file (it was
# unlinked before comm_shm_create returned) and none of Open MPI's own shared-memory
# files of the job (vader_segment.*, which mpirun removes). Files are told apart by
# the job id in their names (osc_sm.<host>.<jobid>.<...>), since other jobs may run
# beside this one. Exit 0 when all holds.
set -u
mpiexec=$1 prog=$2
out=$(mktemp /tmp/capgnn-shm-kill.XXXXXX)
trap 'rm -f "$out"' EXIT
timeout -k 5 60 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root "$prog" --kill >"$out" 2>&1
rc=$?
fail=0
if [ $rc -eq 0 ]; then echo "FAIL: the job exited 0 although rank 1 was killed"; fail=1; fi
line=$(grep '^segment: ' "$out" | head -1)
if [ -z "$line" ]; then
  echo "FAIL: rank 1 did not report its segment"; sed 's/^/    /' "$out"; exit 1
fi
path=${line#segment: }
path=${path% (deleted)}
case "$path" in
  /*) ;;
  *) echo "ok: the segment had no file (anonymous memory): nothing can be left"; exit $fail ;;
esac
if [ -e "$path" ]; then echo "FAIL: $path still exists after the job"; fail=1; fi
name=$(basename "$path")
# osc_sm.<host>.<jobid>.<a>.<b>: the job id is the third field from the end
jobid=$(awk -F. '{print $(NF-2)}' <<<"$name")
if [ -z "$jobid" ]; then echo "FAIL: no job id in $name"; exit 1; fi
left=$(ls -1 /dev/shm 2>/dev/null | grep -F ".$jobid." || true)
if [ -n "$left" ]; then
  echo "FAIL: files of job $jobid left in /dev/shm:"; echo "$left" | sed 's/^/    /'; fail=1
fi
[ $fail -eq 0 ] && echo "ok: job $jobid (segment $name, rank 1 SIGKILLed) left nothing in /dev/shm"
exit $fail
