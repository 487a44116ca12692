# benchmarks/wait_idle.sh — sourced by the benchmark scripts: wait_idle MAXWAIT waits (at
# most MAXWAIT seconds; 0: not at all) until no other process is runnable in 3 samples of
# /proc/loadavg a second apart (its 4th field is runnable/total, this shell included; read
# by a builtin, so no other process), and logs the wait on stderr. On a VM shared with
# other users' jobs, a run that shares the cores measures them, not the program.
wait_idle() {
  local maxwait=$1 t=0 quiet=0 l1 l5 l15 rq rest
  [ "$maxwait" -gt 0 ] || return 0
  while [ "$t" -lt "$maxwait" ] && [ "$quiet" -lt 3 ]; do
    read -r l1 l5 l15 rq rest < /proc/loadavg
    if [ "${rq%/*}" -le 1 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    sleep 1; t=$((t + 1))
  done
  echo "  (waited ${t} s for an idle machine$([ "$quiet" -ge 3 ] || echo ': gave up, running anyway'))" >&2
}
