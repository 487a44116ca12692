/* partition/part_internal.h — private helpers shared by the partition sources and
 * their unit tests. Not part of the public API. */
#ifndef CAPGNN_PARTITION_INTERNAL_H
#define CAPGNN_PARTITION_INTERNAL_H

#include <stdint.h>

#include "partition/partition.h"

/* Turn the return value of a METIS call into a status: METIS_OK (which is 1, not 0)
 * -> CG_OK; anything else -> CG_ERR_METIS with a message naming the call and the
 * METIS status. */
int part_metis_status(int metis_rc, const char *call);

/* Validate the common arguments of part_assign (graph shape, nparts, weights). */
int part_options_check(const struct graph *g, const struct part_options *o);

/* Check that owner[v] is in [0, nparts) for all v (CG_ERR_ARG naming the first bad one). */
int part_owner_check(const struct graph *g, const int32_t *owner, int nparts, const char *what);

/* Vertices grouped by owner: order[start[p] .. start[p+1]) are p's vertices in
 * increasing id. start has nparts + 1 entries, order n. Both cg_malloc'ed. */
int part_group_by_owner(const struct graph *g, const int32_t *owner, int nparts, int64_t **start,
                        int32_t **order);

#endif
