/* apps/cmd_doctor.c — `mpirun ... capgnn doctor [options]`: under the job's own mpirun
 * line, what every rank runs on and what is wrong with the mapping (rapa/rapa.h,
 * "capgnn doctor"). Usage errors exit 2, failures 1; warnings do not change the exit
 * code unless --strict (then 3). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "apps/commands_internal.h"
#include "core/outfile.h"
#include "core/status.h"
#include "mpi/comm.h"
#include "rapa/rapa.h"

#define EXIT_WARNINGS 3

static void usage(FILE *out) {
  fprintf(out,
          "usage: mpirun [mpirun options] capgnn doctor [options]\n"
          "\n"
          "Run it with the mpirun line (hostfile, mapping, environment) that training will use.\n"
          "Every rank reports its host, node, CPUs and binding, GPU (bound as training binds it)\n"
          "and the host's network devices with their NUMA nodes; rank 0 prints the MPI library,\n"
          "whether it is CUDA-aware, NCCL, the transport the environment selects, the latency and\n"
          "bandwidth from rank 0 to a rank of its node and of another node, and warns about a bad\n"
          "mapping: ranks sharing a GPU, a GPU far from its host's NICs, CPUs far from the GPU,\n"
          "overlapping bindings, uneven ranks per node, more ranks than cores, a multi-host job\n"
          "without InfiniBand.\n"
          "\n"
          "  --device cpu|cuda|auto   GPUs to bind and report (default auto: when every rank sees one)\n"
          "  --no-links               skip the ping-pong measurements\n"
          "  --json FILE              write the report as JSON (schema capgnn-doctor/1)\n"
          "  --force                  replace an existing file at --json that is not a doctor's report\n"
          "  --strict                 exit 3 when there is a warning\n"
          "  -h, --help               this help\n");
}

#define usage_error(...) cli_usage_error("doctor", __VA_ARGS__)

enum { OPT_DEVICE = 256, OPT_NO_LINKS, OPT_JSON, OPT_FORCE, OPT_STRICT };

int cmd_doctor(int argc, char **argv) {
  static const struct option longopts[] = {
      {"device", required_argument, NULL, OPT_DEVICE}, {"no-links", no_argument, NULL, OPT_NO_LINKS},
      {"json", required_argument, NULL, OPT_JSON},     {"force", no_argument, NULL, OPT_FORCE},
      {"strict", no_argument, NULL, OPT_STRICT},       {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  struct rapa_doctor_opts o = {"auto", 1, NULL};
  int rc = 0, c, force = 0, strict = 0;
  optind = 1;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if ((rc = cli_check_value("doctor", argc, argv, optind, optarg)) != 0) break;
    switch (c) {
      case 'h': usage(stdout); return CAPGNN_EXIT_OK;
      case OPT_DEVICE:
        if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda") && strcmp(optarg, "auto"))
          rc = usage_error("--device '%s': expected cpu, cuda or auto", optarg);
        o.device = optarg;
        break;
      case OPT_NO_LINKS: o.links = 0; break;
      case OPT_JSON: o.json = optarg; break;
      case OPT_FORCE: force = 1; break;
      case OPT_STRICT: strict = 1; break;
      case ':': rc = usage_error("option '%s' needs a value", name); break;
      default: rc = cli_bad_option("doctor", name, longopts); break;
    }
  }
  cli_options_done();
  if (rc) return rc;
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  if (o.json) {
    static const char *const sig[] = {"{\n\t\"schema\":\t\"capgnn-doctor/", NULL};
    static const struct cg_outfile_kind kind = {"doctor's report", sig, 0, NULL};
    if (!o.json[0]) return usage_error("--json: empty file name");
    if (cg_outfile_check(o.json, "--json", &kind, NULL, 0, force, 0) != CG_OK ||
        cg_outfile_probe(o.json, "doctor's report") != CG_OK)
      return cli_runtime_error();
  }
  struct comm *cm = NULL;
  /* one process: said now, as a bad option. Several: comm_init compares them all and
   * every rank refuses together, rank 0 speaking (a rank that left here alone, before
   * MPI, would leave the others waiting in MPI's start-up under a launcher that does
   * not end a job when one process exits, e.g. srun without --kill-on-bad-exit) */
  if (cli_launch_size() == 1 && comm_emulate_nodes_check() != CG_OK) {
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    return CAPGNN_EXIT_USAGE;
  }
  if (comm_init(NULL, NULL, &cm) != CG_OK) {
    if (cg_err_status() == CG_ERR_ARG) { /* refused by every rank together: said once, before any rank leaves */
      if (cli_speaks()) fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
      return comm_leave(CAPGNN_EXIT_USAGE);
    }
    fprintf(stderr, "capgnn: error: %s\n", cg_err_msg());
    comm_abort(NULL, CAPGNN_EXIT_FAILURE);
  }
  int nwarn = 0;
  const int st = rapa_doctor_run(cm, &o, stdout, &nwarn);
  /* (every failure of rapa_doctor_run is agreed by all ranks, comm_gather_text's too)
   * once per cause, by the rank that failed: not rank 0's "rank R failed during ..."
   * when rank R alone failed */
  if (st != CG_OK) cli_report_setup_error(cm);
  const int rank = comm_rank(cm);
  comm_finalize(&cm);
  if (st != CG_OK) return CAPGNN_EXIT_FAILURE;
  return strict && rank == 0 && nwarn > 0 ? EXIT_WARNINGS : CAPGNN_EXIT_OK;
}
