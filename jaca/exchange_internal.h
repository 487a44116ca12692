/* jaca/exchange_internal.h — what tests may see of a caching exchange. */
#ifndef CAPGNN_JACA_EXCHANGE_INTERNAL_H
#define CAPGNN_JACA_EXCHANGE_INTERNAL_H

#include "core/exchange.h"
#include "jaca/node_internal.h"

/* The node tier's plan of a caching exchange (NULL for any other exchange). */
const struct jaca_node_plan *jaca_exchange_plan(const struct cg_exchange *ex);

#endif
