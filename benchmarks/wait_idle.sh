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

# rr_timeslice MS: when this shell runs in the real-time round-robin class (`chrt -r`, how
# the README's timed runs are made, so that other users' jobs cannot take the cores), the
# kernel's round-robin quantum (/proc/sys/kernel/sched_rr_timeslice_ms, 100 ms by default)
# decides how long a rank that shares a core waits for a preempted peer: up to a whole
# quantum per exchange, where the normal scheduler switches every few milliseconds. Sets
# the quantum to MS (rounded up by the kernel to whole ticks) for the rest of the script and
# restores it on exit; says what it did on stderr. Outside the class, or where the file is
# not writable (not root), it changes nothing and says so.
rr_timeslice() {
  local want=$1 f=/proc/sys/kernel/sched_rr_timeslice_ms old
  case "$(chrt -p $$ 2>/dev/null)" in
    *SCHED_RR*) ;;
    *) echo "  (not in the round-robin class: the scheduler's quantum left alone)" >&2; return 0 ;;
  esac
  old=$(cat "$f" 2>/dev/null) || { echo "  (no $f: the round-robin quantum left alone)" >&2; return 0; }
  if [ "$old" = "$want" ]; then echo "  (round-robin quantum: $want ms)" >&2; return 0; fi
  if ! { echo "$want" > "$f"; } 2>/dev/null; then
    echo "  (round-robin quantum left at $old ms: $f is not writable)" >&2; return 0
  fi
  trap "echo $old > $f" EXIT
  echo "  (round-robin quantum $old -> $(cat "$f") ms for this run; restored on exit)" >&2
}
