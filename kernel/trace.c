// SPDX-License-Identifier: GPL-2.0
/*
 * som's tracepoints, defined once (som_trace.h describes them).
 */
#define CREATE_TRACE_POINTS
#include "som_trace.h"
