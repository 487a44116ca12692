#!/usr/bin/env bash
# benchmarks/bench_sched_round.sh — how MPI ranks that share cores take turns (README,
# "capgnn plan": the shared-core model). Not a capgnn program: a 60-line MPI program,
# compiled here with mpicc, that isolates the pattern of a training step.
#
# Each of NP ranks repeats R rounds of: a fixed amount of arithmetic (calibrated on each
# rank alone, one after the other, to BURST microseconds), then an exchange with both ring
# neighbours (MPI_Sendrecv each way). It prints, per rank, the round time, the time its
# burst took (wall: it grows when the rank is preempted inside it) and the CPU time it
# used per round (a rank that spins while waiting uses its core even when it has nothing
# to do). With NP ranks on C cores and every core shared evenly, a round takes about
# NP / C x the burst; a larger figure means some core was shared by more ranks.
# Placement: "bound" = --map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed (ranks
# round-robin on the cores, as benchmarks/bench_plan.sh runs them), "unbound" =
# --oversubscribe alone. Run it under the class the benchmarks use:
#   flock /tmp/timing.lock chrt -r 10 benchmarks/bench_sched_round.sh [-n NP] [-b "100 1000 10000"]
set -euo pipefail
np=4
bursts="100 1000 10000"
while getopts "n:b:h" opt; do
  case $opt in
    n) np=$OPTARG ;;
    b) bursts=$OPTARG ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2 ;;
  esac
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/round.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static volatile double sink;
static void work(long n) { double a = 1.0; for (long i = 0; i < n; i++) a = a * 1.0000001 + 1e-9; sink = a; }
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const double burst_us = atof(argv[1]);
  const int R = atoi(argv[2]);
  long n = 1000;
  double t = 0;
  for (int q = 0; q < P; q++) { /* calibrate alone, one rank after the other */
    if (q == r) for (;;) { double a = now(); work(n); t = now() - a; if (t > 0.02) break; n *= 2; }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  long iters = (long)(n * (burst_us * 1e-6) / t);
  MPI_Allreduce(MPI_IN_PLACE, &iters, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
  double b[64] = {0}, in[64];
  const int L = (r + P - 1) % P, Rt = (r + 1) % P;
  MPI_Barrier(MPI_COMM_WORLD);
  const double c0 = cpu(), t0 = now();
  double wsum = 0;
  for (int k = 0; k < R; k++) {
    double a = now();
    work(iters);
    wsum += now() - a;
    MPI_Sendrecv(b, 64, MPI_DOUBLE, Rt, 0, in, 64, MPI_DOUBLE, L, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(b, 64, MPI_DOUBLE, L, 1, in, 64, MPI_DOUBLE, Rt, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  const double out[3] = {(now() - t0) / R * 1e6, wsum / R * 1e6, (cpu() - c0) / R * 1e6};
  double *all = malloc(sizeof(double) * 3 * (size_t)P);
  MPI_Gather(out, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (r == 0) {
    printf("  burst %6.0f us:", burst_us);
    for (int q = 0; q < P; q++) printf("  rank %d round %.0f burst %.0f cpu %.0f", q, all[3 * q], all[3 * q + 1], all[3 * q + 2]);
    printf("  (us per round)\n");
  }
  free(all);
  MPI_Finalize();
  return 0;
}
C
mpicc -O2 -o "$dir/round" "$dir/round.c"
echo "$(nproc) cores, $np ranks; $(chrt -p $$ | sed -n 's/.*scheduling policy: *//p'), round-robin quantum $(cat /proc/sys/kernel/sched_rr_timeslice_ms 2>/dev/null || echo ?) ms; loadavg $(cat /proc/loadavg)"
for place in unbound bound; do
  if [ $place = bound ]; then opts=(--map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed); else opts=(--oversubscribe); fi
  echo "$place (mpiexec ${opts[*]}):"
  for b in $bursts; do
    mpiexec -n "$np" "${opts[@]}" "$dir/round" "$b" $((2000000 / (b + 50)))
  done
done
