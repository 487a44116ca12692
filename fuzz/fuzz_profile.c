/* fuzz/fuzz_profile.c — a device profile (`capgnn profile` output, read back by
 * `--profile FILE`) on untrusted text: rapa_profile_parse and validation, then what
 * a run reads from an accepted profile (keys, descriptions, capabilities, the text
 * report). */
#include "fuzz_util.h"

#include "rapa/rapa.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  char *json = malloc(size + 1);
  memcpy(json, data, size);
  json[size] = '\0';
  struct rapa_profile *p = NULL;
  if (FUZZ(rapa_profile_parse(json, "fuzz.json", &p)) == 0) {
    const int n = rapa_profile_nranks(p);
    for (int r = 0; r < n; r++) {
      (void)rapa_profile_key(p, r);
      (void)rapa_profile_describe(p, r);
    }
    double *rel = malloc((size_t)(n > 0 ? n : 1) * sizeof *rel), *t = malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    (void)FUZZ(rapa_profile_capabilities(p, rel, t));
    free(rel);
    free(t);
    static FILE *devnull;
    if (!devnull) devnull = fopen("/dev/null", "w");
    if (devnull) rapa_report_text(p, devnull);
    rapa_profile_destroy(&p);
  }
  free(json);
  /* the file reader too (a different length rule: no NUL inside) */
  if (FUZZ(rapa_profile_load(fuzz_file(data, size), &p)) == 0) rapa_profile_destroy(&p);
  return 0;
}
