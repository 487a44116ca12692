/* fuzz/fuzz_profile.c — a device profile (`capgnn profile` output, read back by
 * `--profile FILE`) on untrusted text: rapa_profile_parse and validation, then what
 * a run reads from an accepted profile (keys, descriptions, capabilities, the text
 * report); then the same text as a file of the profile cache (rapa_cache_read: a device
 * or the links). */
#include "fuzz_util.h"

#include <cjson/cJSON.h>

#include "rapa/rapa.h"
#include "rapa/rapa_internal.h"

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
  const char *path = fuzz_file(data, size);
  if (FUZZ(rapa_profile_load(path, &p)) == 0) rapa_profile_destroy(&p);
  /* and as a file of the profile cache (<cache>/profile/NAME.json, which `capgnn profile`
   * reuses): one device's measurements, or the links */
  static const char *const schemas[2] = {"capgnn-device-profile", "capgnn-links-profile"};
  for (int k = 0; k < 2; k++) {
    cJSON *root = NULL;
    char why[512];
    if (rapa_cache_read(path, schemas[k], 1, 0, &root, why, sizeof why) == 1) cJSON_Delete(root);
  }
  return 0;
}
