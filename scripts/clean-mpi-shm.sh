#!/usr/bin/env bash
# scripts/clean-mpi-shm.sh [--remove] [--launcher PID]
# Lists (with --remove: deletes) the files Open MPI 4 leaves behind when `mpirun` itself
# is killed with SIGKILL (kill -9 of mpirun, an OOM kill, a batch system's hard kill):
#  - /dev/shm/vader_segment.HOST.JOBID.RANK: each rank's shared-memory transport (vader
#    BTL), 4 MiB apparent size, ~100 kB resident; created by the rank in MPI_Init;
#  - TMPDIR/ompi.HOST.UID/pid.PID: mpirun's session directory (PMIx's data store,
#    ~8 MB).
# mpirun removes both when the job ends, even when ranks die (a failed rank, MPI_Abort,
# the stall watchdog); after a kill -9 of mpirun nothing is left to do it. The ranks
# themselves end within seconds (they lose mpirun), so only these files remain (tested
# by tests/run_mpirun_kill9.sh).
# A session directory is stale when its mpirun no longer runs; a segment is stale when
# its job's session directory is, or when no running process maps it and it is older
# than a minute. Files of running jobs are never touched. --launcher PID: only the files
# of the job that the mpirun with that (former) pid started.
set -euo pipefail
remove=0 only=
while [ $# -gt 0 ]; do
  case $1 in
    --remove) remove=1; shift ;;
    --launcher) only=${2:?}; shift 2 ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done
host=$(hostname)
uid=$(id -u)
top=${TMPDIR:-/tmp}/ompi.$host.$uid
shm=/dev/shm
stale=()
declare -A stale_jobs=()

launcher_runs() { # PID: is it a live mpirun (or another Open MPI launcher)?
  local comm
  comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
  case $comm in mpirun|mpiexec|orterun|orted|prterun|prte) return 0 ;; *) return 1 ;; esac
}

for d in "$top"/pid.*; do
  [ -d "$d" ] || continue
  pid=${d##*/pid.}
  [ -n "$only" ] && [ "$pid" != "$only" ] && continue
  launcher_runs "$pid" && continue
  stale+=("$d")
  for seg in "$d"/pmix_dstor_ds21_*/smdataseg-*; do # smdataseg-JOBID-N: the job's id, decimal
    [ -e "$seg" ] || continue
    job=${seg##*/smdataseg-}; job=${job%%-*}
    [[ $job =~ ^[0-9]+$ ]] && stale_jobs[$(printf '%x' "$job")]=1
  done
done
for f in "$shm"/vader_segment."$host"."$uid".*; do # vader_segment.HOST.UID.JOBID.RANK
  [ -e "$f" ] || continue
  job=$(basename "$f" | awk -F. '{print $(NF-1)}')
  if [ -n "${stale_jobs[$job]:-}" ]; then stale+=("$f"); continue; fi
  [ -n "$only" ] && continue
  grep -qsF "$f" /proc/[0-9]*/maps && continue                       # a running process maps it
  [ -n "$(find "$f" -maxdepth 0 -mmin +1 2>/dev/null)" ] && stale+=("$f") # (not one being created now)
done
for s in "${stale[@]}"; do
  if [ $remove -eq 1 ]; then rm -rf -- "$s" && echo "removed $s"; else echo "$s"; fi
done
[ ${#stale[@]} -eq 0 ] && echo "nothing left behind by Open MPI jobs" >&2
exit 0
