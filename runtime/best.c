/* runtime/best.c — --save-best FILE: the weights of the best epoch (the highest
 * validation accuracy of the --eval-every schedule and of the evaluation after the last
 * epoch, the epoch the log and the summary name; runtime.h's rt_train), written as a
 * checkpoint of that epoch when the run ends.
 *
 * Design notes (the why):
 * - What a PyG or DGL user does by hand (deep-copy the state dict when the validation
 *   accuracy improves, save it at the end), in the file format capgnn already reads
 *   back: `capgnn predict` and `--resume` take it, `capgnn info` describes it.
 * - The copy stays on the backend (a device-to-device copy per new best, no transfer
 *   to the host during training) and on rank 0 only: every rank holds the same
 *   parameters, and rank 0 writes.
 * - It is written once, at the end, however the run ends (completed, stopped early,
 *   interrupted, diverged: the best epoch before the divergence is still good), not at
 *   every improvement: a best that changes often would rewrite the file as often. */
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

int rt_best_keep_init(struct rt_best_keep *k, struct rt_model *m, const struct rt_local *loc,
                      const struct rt_config *cfg) {
  memset(k, 0, sizeof *k);
  if (!cfg->save_best_path || loc->rank != 0) return CG_OK;
  const size_t bytes = (size_t)m->nparams * sizeof(float);
  struct cg_backend *be = m->be;
  TRY(be->alloc(be, (void **)&k->p, bytes, "best-epoch parameters"));
  TRY(be->alloc(be, (void **)&k->m1, bytes, "best-epoch optimizer state"));
  TRY(be->alloc(be, (void **)&k->m2, bytes, "best-epoch optimizer state"));
  return CG_OK;
}

void rt_best_keep_take(struct rt_best_keep *k, struct rt_model *m, const struct rt_train_track *tr,
                       const struct rt_eval *ev) {
  k->epoch = tr->best.epoch;
  k->tr = *tr;
  k->train_acc = ev->train_acc;
  k->val_acc = ev->val_acc;
  k->test_acc = ev->test_acc;
  k->steps = m->t_step;
  if (!k->p) return;
  const size_t bytes = (size_t)m->nparams * sizeof(float);
  m->be->copy(m->be, k->p, m->p, bytes);
  m->be->copy(m->be, k->m1, m->m1, bytes);
  m->be->copy(m->be, k->m2, m->m2, bytes);
}

int rt_best_keep_save(struct rt_best_keep *k, struct rt_model *m, const struct cg_backend *be,
                      const struct rt_local *loc, struct cg_exchange *ex, const struct rt_config *cfg,
                      const struct rt_result *r, int *written) {
  *written = 0;
  if (!cfg->save_best_path) return CG_OK;
  if (k->epoch == 0) { /* the same answer on every rank: the evaluations are global */
    struct stat st;
    if (cfg->resume_path && stat(cfg->save_best_path, &st) == 0)
      LOG_INFO("train", "--save-best %s: no epoch of this run beat the best of the run it resumed (epoch %d); "
               "the file keeps what that run wrote there", cfg->save_best_path, r->best_epoch);
    else if (cfg->resume_path) /* saying "the file keeps" of a file that is not there misleads */
      LOG_WARN("train", "--save-best %s: nothing written: no epoch of this run beat the best of the run it "
               "resumed (epoch %d), whose weights only that run held, and %s does not exist (that run's "
               "--save-best file holds them, FILE.seedN for a run of --seeds)", cfg->save_best_path,
               r->best_epoch, cfg->save_best_path);
    else /* (global: once for the job) */
      LOG_WARN_COMMON("train", "--save-best %s: no scheduled evaluation with validation vertices, so no best epoch; "
                      "nothing written", cfg->save_best_path);
    return CG_OK;
  }
  struct rt_result at = *r; /* the run as it stood at the best epoch */
  at.final_train_acc = k->train_acc;
  at.final_val_acc = k->val_acc;
  at.final_test_acc = k->test_acc;
  TRY(rt_checkpoint_save_state(cfg->save_best_path, m, be, loc, ex, cfg, &at, &k->tr, NULL, k->epoch, k->p,
                               k->m1, k->m2, k->steps));
  *written = 1;
  return CG_OK;
}

void rt_best_keep_free(struct rt_best_keep *k, struct rt_model *m) {
  if (m && k->p) {
    m->be->free(m->be, k->p);
    m->be->free(m->be, k->m1);
    m->be->free(m->be, k->m2);
  }
  memset(k, 0, sizeof *k);
}
