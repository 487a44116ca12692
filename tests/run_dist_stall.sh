#!/usr/bin/env bash
# tests/run_dist_stall.sh MPIEXEC CAPGNN
# A stalled rank cannot hang the job (issue #18, item 4): `capgnn` trains on 2 ranks
# with --stall-timeout 5; once training runs, rank 1 is stopped with SIGSTOP (it can
# do nothing from then on). Rank 0's watchdog must end the job within the timeout plus
# 10 s, with exit status 75, naming rank 1 as stopped and saying where rank 0 waited;
# and no process of the job may be left (the stopped one included), nor its files in
# /dev/shm.
set -u
mpiexec=$1 capgnn=$2
timeout_s=5
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$dir/out.log
"$mpiexec" -n 2 --oversubscribe --allow-run-as-root "$capgnn" --graph synth:tiny --epochs 10000000 \
  --device cpu --threads 1 --no-part-cache --quiet --stall-timeout $timeout_s --metrics "$dir/m.jsonl" \
  >"$out" 2>&1 &
launcher=$!
# training has started once a metrics record exists (in the run's temporary)
for _ in $(seq 1 600); do
  compgen -G "$dir/m.jsonl.tmp.*" >/dev/null && [ -s "$(compgen -G "$dir/m.jsonl.tmp.*" | head -1)" ] && break
  sleep 0.05
done
ranks=($(pgrep -P $launcher))
fail=0
if [ ${#ranks[@]} -ne 2 ]; then
  echo "FAIL: expected 2 rank processes under $mpiexec ($launcher), found: ${ranks[*]}"
  kill -9 $launcher "${ranks[@]}" 2>/dev/null; exit 1
fi
# rank 1: the one whose environment says so
stopped=
for p in "${ranks[@]}"; do
  tr '\0' '\n' </proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && stopped=$p
done
[ -n "$stopped" ] || stopped=${ranks[1]}
jobhex=$(printf '%x' "$(tr '\0' '\n' </proc/$stopped/environ | sed -n 's/^OMPI_MCA_ess_base_jobid=//p')")
kill -STOP "$stopped"
start=$(date +%s%N)
limit=$((timeout_s + 10))
# (a hang must fail the test, not the suite: the launcher goes at limit + 20 s)
while kill -0 $launcher 2>/dev/null && [ $(( ($(date +%s%N) - start) / 1000000000 )) -lt $((limit + 20)) ]; do
  sleep 0.1
done
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
kill -9 $launcher 2>/dev/null
wait $launcher
rc=$?
sleep 1
cat "$out"
echo "run_dist_stall.sh: rank 1 (pid $stopped) stopped; the job ended with exit code $rc after ${elapsed_ms} ms"
if [ "$elapsed_ms" -gt $((limit * 1000)) ]; then echo "FAIL: the job took ${elapsed_ms} ms to end (limit ${limit} s)"; fail=1; fi
if [ "$rc" -ne 75 ]; then echo "FAIL: exit code $rc, expected 75 (the watchdog's)"; fail=1; fi
for expect in "rank 0 has been waiting for the other ranks in" "rank 1 (pid $stopped, this host) has not run for" \
              "it is stopped (SIGSTOP"; do
  grep -qF -- "$expect" "$out" || { echo "FAIL: the output does not contain '$expect'"; fail=1; }
done
for p in "${ranks[@]}"; do
  state=$(ps -o stat= -p "$p" 2>/dev/null | tr -d ' ')
  if [ -n "$state" ] && [ "${state#Z}" = "$state" ]; then
    echo "FAIL: rank process $p is still there (state $state)"; kill -9 "$p"; fail=1
  fi
done
# mpirun is alive to clean up: nothing of the job stays in /dev/shm (a kill -9 of mpirun
# itself is tests/run_mpirun_kill9.sh's case)
left=$(ls /dev/shm | grep -F ".$jobhex." || true)
[ -z "$left" ] || { echo "FAIL: files of job $jobhex left in /dev/shm: $left"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok: the stopped rank ended the job in ${elapsed_ms} ms (timeout ${timeout_s} s)"
exit $fail
