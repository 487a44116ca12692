/* runtime/early_stop.c — --early-stop N: when a run stops because its validation loss
 * no longer improves (the rules: runtime.h, rt_train).
 *
 * Design notes (the why):
 * - Two rules, because users come with two habits: "patience" is what Keras'
 *   EarlyStopping, PyG's and DGL's examples do (no new lowest validation loss in N
 *   evaluations); "window" is Kipf & Welling's gcn/train.py, which the GCN paper's
 *   81.5 % on Cora comes from: at 0-based epoch e > N, stop when the validation loss is
 *   greater than the mean of the N before it
 *   (`cost_val[-1] > np.mean(cost_val[-(N+1):-1])`). A third, "gat", is Veličković et
 *   al.'s GAT code (execute_cora.py), which its 83.0 % on Cora comes from: patience
 *   counts evaluations in which neither the validation loss reached (<=) its lowest
 *   nor the validation accuracy its highest (>=) so far; either one resets it. (Their
 *   code then tests the weights of the last epoch that improved both; capgnn's summary
 *   reports the epoch of highest validation accuracy, ties to the lower loss.)
 * - The rule counts the evaluations of the --eval-every schedule (epochs, by default);
 *   the extra evaluation after the last epoch is not on it, as for the best epoch.
 * - Its whole state travels in checkpoints, so that a resumed run stops where the
 *   uninterrupted one would. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "runtime/runtime_internal.h"

int rt_early_stop_init(struct rt_early_stop *es, const struct rt_config *cfg) {
  memset(es, 0, sizeof *es);
  es->n = cfg->early_stop;
  es->rule = cfg->early_stop_rule;
  es->best_loss = INFINITY;
  es->best_acc = -1.0;
  if (es->n > 0 && es->rule == RT_ES_WINDOW) {
    es->hist = cg_calloc((size_t)es->n, sizeof(double), "early-stopping window");
    if (!es->hist) return CG_ERR_NOMEM;
  }
  return CG_OK;
}

void rt_early_stop_free(struct rt_early_stop *es) {
  if (!es) return;
  cg_free(es->hist);
  memset(es, 0, sizeof *es);
}

int rt_early_stop_update(struct rt_early_stop *es, double val_loss, double val_acc) {
  if (es->n <= 0) return 0;
  es->evals++;
  if (es->rule == RT_ES_GAT) {
    const int better = val_loss <= es->best_loss || val_acc >= es->best_acc;
    if (val_loss < es->best_loss) es->best_loss = val_loss;
    if (val_acc > es->best_acc) es->best_acc = val_acc;
    es->since = better ? 0 : es->since + 1;
    es->stopped = es->since >= es->n;
    return es->stopped;
  }
  if (es->rule == RT_ES_PATIENCE) {
    if (val_loss < es->best_loss) {
      es->best_loss = val_loss;
      es->since = 0;
    } else {
      es->since++;
    }
    es->stopped = es->since >= es->n;
    return es->stopped;
  }
  /* window (Kipf & Welling): evaluation k (1-based) with k > N + 1, against the mean of
   * the N before it; the mean summed oldest first, as np.mean over the list */
  int stop = 0;
  if (es->evals > es->n + 1 && es->hist_n == es->n) {
    double sum = 0.0;
    for (int i = 0; i < es->n; i++) sum += es->hist[i];
    stop = val_loss > sum / (double)es->n;
  }
  if (es->hist_n == es->n) {
    memmove(es->hist, es->hist + 1, (size_t)(es->n - 1) * sizeof(double));
    es->hist[es->n - 1] = val_loss;
  } else {
    es->hist[es->hist_n++] = val_loss;
  }
  es->stopped = stop;
  return stop;
}

void rt_early_stop_to_checkpoint(const struct rt_early_stop *es, struct rt_checkpoint *c) {
  c->stopped_early = es->stopped;
  c->es_evals = es->evals;
  c->es_since = es->since;
  c->es_best_loss = es->best_loss;
  c->es_best_acc = es->best_acc;
  c->es_hist_n = es->hist_n;
  c->es_hist = es->hist; /* borrowed */
}

int rt_early_stop_from_checkpoint(struct rt_early_stop *es, const struct rt_checkpoint *c) {
  if (es->n <= 0) return CG_OK; /* this run does not stop early: nothing to continue */
  if (c->early_stop != es->n || c->early_stop_rule != es->rule)
    return CG_OK; /* other settings: the rule starts afresh (rt_checkpoint_fits warned) */
  es->evals = c->es_evals;
  es->since = c->es_since;
  es->best_loss = c->es_best_loss;
  es->best_acc = c->es_best_acc;
  if (es->rule == RT_ES_WINDOW) {
    if (c->es_hist_n < 0 || c->es_hist_n > es->n)
      return cg_err_set(CG_ERR_FORMAT, "checkpoint: the early-stopping window holds %d losses, at most %d expected",
                        c->es_hist_n, es->n);
    es->hist_n = c->es_hist_n;
    if (es->hist_n > 0) memcpy(es->hist, c->es_hist, (size_t)es->hist_n * sizeof(double));
  }
  return CG_OK;
}

const char *rt_early_stop_describe(const struct rt_early_stop *es) {
  static char buf[160];
  if (es->rule == RT_ES_PATIENCE)
    snprintf(buf, sizeof buf, "the validation loss has not gone below %.6f for %d evaluations (--early-stop %d)",
             es->best_loss, es->since, es->n);
  else if (es->rule == RT_ES_GAT)
    snprintf(buf, sizeof buf, "neither the validation loss (lowest %.6f) nor the accuracy (highest %.4f) improved "
             "for %d evaluations (--early-stop %d --early-stop-rule gat)", es->best_loss, es->best_acc, es->since, es->n);
  else
    snprintf(buf, sizeof buf, "the validation loss rose above the mean of the %d evaluations before it "
             "(--early-stop %d --early-stop-rule window)", es->n, es->n);
  return buf;
}
