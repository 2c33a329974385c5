/*
 * rp_run_int.h
 *    What the run's files share: rp_run.c (the setup, the reconnecting
 *    loop, the ends of a run) and rp_run_step.c (one connection's life and
 *    the steps it takes: feedback, handing over, the clean ends).
 */
#ifndef RP_RUN_INT_H
#define RP_RUN_INT_H

#include "run/rp_run.h"

/* One connection's life: 0 = finished (endpos or a stop), -1 = error (rp_error). */
extern int	rp_run_once(RpRun *run, bool have_ck);

/* Tell the run's subscriber (the slot filled in). */
extern void rp_run_emit(RpRun *run, RpEvent *ev);

/* A line for the program's log (printf-style). */
extern void rp_run_log(RpRun *run, RpRunLogLevel level, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

#endif							/* RP_RUN_INT_H */
