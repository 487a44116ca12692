#!/usr/bin/env bash
# tests/run_spawn_orphans.sh CAPGNN TEST...
# The tests of the capgnn binary that start mpiexec (TEST CAPGNN MPIEXEC) leave no job
# behind when they are killed, as ctest's TIMEOUT kills them: each TEST is given, for
# MPIEXEC, a stand-in named mpiexec that records its pid and sleeps (a job that never
# ends); once the test has started it, the test gets SIGKILL, and the stand-in must be
# gone a few seconds later (cli_run: the parent-death signal). Started with system(),
# its shell and the stand-in lived on.
set -u
capgnn=$1
shift
dir=$(mktemp -d)
fail=0
pids=$dir/pids
: >"$pids"
cleanup() {
  # the stand-ins this script started, if any are left; the tests' folders under /tmp
  # (their --metrics paths: the stand-in writes its arguments)
  [ -s "$pids" ] && while read -r pid args; do
    kill -9 "$pid" 2>/dev/null
    met=$(printf '%s\n' "$args" | sed -n 's/.*--metrics \([^ ]*\).*/\1/p')
    case "$met" in /tmp/capgnn_*_??????/*) rm -rf "$(dirname "$met")" ;; esac
  done <"$pids"
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/bin"
cat >"$dir/bin/mpiexec" <<'EOF'
#!/usr/bin/env bash
echo "$$ $*" >>"$FAKE_MPIEXEC_PIDS"
exec sleep 600
EOF
chmod +x "$dir/bin/mpiexec"
export FAKE_MPIEXEC_PIDS=$pids
for t in "$@"; do
  before=$(wc -l <"$pids")
  "$t" "$capgnn" "$dir/bin/mpiexec" >"$dir/test.log" 2>&1 &
  tpid=$!
  started=
  for _ in $(seq 1 1200); do # its runs before the first mpiexec: up to 2 min
    [ "$(wc -l <"$pids")" -gt "$before" ] && { started=1; break; }
    kill -0 "$tpid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$started" ]; then
    echo "FAIL: $(basename "$t") never started mpiexec; its output:"; sed 's/^/    /' "$dir/test.log"
    fail=1; kill -9 "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null; continue
  fi
  sleep 0.5
  kill -9 "$tpid"
  wait "$tpid" 2>/dev/null
  pid=$(tail -n 1 "$pids" | cut -d' ' -f1)
  left=1
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || { left=; break; }; sleep 0.1; done
  if [ -n "$left" ]; then
    echo "FAIL: $(basename "$t") killed: the mpiexec it started (pid $pid) still runs 5 s later"; fail=1
  else
    echo "ok: $(basename "$t") killed: the mpiexec it started (pid $pid) ended with it"
  fi
done
exit $fail
