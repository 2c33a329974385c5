/*
 * rp_logsink.h
 *    The log sinks (stdout, file:, exec:): their constructors.  The sink API
 *    they implement is stream/rp_sink.h; their lines come from
 *    lines/rp_lines.h, which the NATS sink shares.
 */
#ifndef RP_LOGSINK_H
#define RP_LOGSINK_H

#include "stream/rp_sink.h"

/*
 * Each returns NULL after rp_fail() on error.  env may be NULL (the
 * defaults).
 */
extern RpSink *rp_sink_stdout_open(const RpSinkEnv *env);
extern RpSink *rp_sink_file_open(const char *path, const RpSinkEnv *env);

/* ack_timeout_s: longest wait for the child to read or acknowledge (0: none) */
extern RpSink *rp_sink_exec_open(const char *command, int ack_timeout_s, const RpSinkEnv *env);

#endif							/* RP_LOGSINK_H */
