#!/usr/bin/env bash
# tests/run_mpirun_kill9.sh MPIEXEC CAPGNN CLEAN_SCRIPT
# What a kill -9 of mpirun leaves behind (issue #18, item 4), and that
# scripts/clean-mpi-shm.sh removes exactly that. `capgnn` trains on 2 ranks; once
# training runs, mpirun is killed with SIGKILL. Then:
#  - the ranks end on their own within 20 s (they lose mpirun): no orphan trains on;
#  - left behind are exactly the job's Open MPI files: one /dev/shm/vader_segment.*
#    per rank (the shared-memory transport) and mpirun's session directory
#    (TMPDIR/ompi.HOST.UID/pid.PID); nothing else of the job in /dev/shm (the stall
#    watchdog's shared block, an MPI window, is unlinked once mapped);
#  - clean-mpi-shm.sh --launcher PID lists exactly those, and --remove deletes them.
set -u
mpiexec=$1 capgnn=$2 clean=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$mpiexec" -n 2 --oversubscribe --allow-run-as-root "$capgnn" --graph synth:tiny --epochs 10000000 \
  --device cpu --threads 1 --no-part-cache --quiet --metrics "$dir/m.jsonl" >"$dir/out.log" 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  f=$(compgen -G "$dir/m.jsonl.tmp.*" | head -1)
  [ -n "$f" ] && [ -s "$f" ] && break
  sleep 0.05
done
ranks=($(pgrep -P $launcher))
fail=0
[ ${#ranks[@]} -eq 2 ] || { echo "FAIL: expected 2 ranks under $launcher: ${ranks[*]}"; kill -9 $launcher; exit 1; }
env0=$(tr '\0' '\n' </proc/${ranks[0]}/environ)
jobhex=$(printf '%x' "$(echo "$env0" | sed -n 's/^OMPI_MCA_ess_base_jobid=//p')")
session=$(echo "$env0" | sed -n 's/^OMPI_MCA_orte_jobfam_session_dir=//p')
echo "job $jobhex, session directory $session, ranks ${ranks[*]}, mpirun $launcher"
kill -9 $launcher
wait $launcher 2>/dev/null
for _ in $(seq 1 200); do
  alive=0
  for p in "${ranks[@]}"; do
    st=$(ps -o stat= -p "$p" 2>/dev/null | tr -d ' ')
    [ -n "$st" ] && [ "${st#Z}" = "$st" ] && alive=1
  done
  [ $alive -eq 0 ] && break
  sleep 0.1
done
if [ $alive -ne 0 ]; then echo "FAIL: ranks still running 20 s after mpirun was killed"; kill -9 "${ranks[@]}"; fail=1; fi
left=$(ls /dev/shm | grep -F ".$jobhex." | sort)
echo "left in /dev/shm: $(echo $left)"
want=$(printf 'vader_segment.%s.%s.%s.0\nvader_segment.%s.%s.%s.1' "$(hostname)" "$(id -u)" "$jobhex" \
       "$(hostname)" "$(id -u)" "$jobhex")
[ "$left" = "$want" ] || { echo "FAIL: expected exactly the two vader segments of job $jobhex"; fail=1; }
[ -d "$session" ] || { echo "FAIL: no session directory $session left (the documentation says there is)"; fail=1; }
listed=$(bash "$clean" --launcher $launcher | sort)
expect=$(printf '%s\n/dev/shm/%s\n' "$session" "$(echo "$want" | head -1)"; echo "/dev/shm/$(echo "$want" | tail -1)")
expect=$(echo "$expect" | sort)
[ "$listed" = "$expect" ] || { echo "FAIL: clean-mpi-shm.sh listed:"; echo "$listed"; echo "expected:"; echo "$expect"; fail=1; }
bash "$clean" --launcher $launcher --remove
left=$(ls /dev/shm | grep -F ".$jobhex.")
[ -z "$left" ] && [ ! -e "$session" ] || { echo "FAIL: still there after --remove: $left $session"; fail=1; }
[ $fail -eq 0 ] && echo "ok: a kill -9 of mpirun leaves the job's vader segments and session directory; the ranks end; the script removes them"
exit $fail
