/*
 * rp_cliparse.h
 *    The command line's values, parsed strictly (pure functions, no I/O).
 *    A size or number that is negative, overflows, carries stray
 *    characters or falls outside its option's range is refused: a usage
 *    error is better than a limit that silently means something else.
 */
#ifndef RP_CLIPARSE_H
#define RP_CLIPARSE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A size: decimal digits, then optionally one unit (B, kB, MB, GB, TB;
 * case-insensitive, 1024-based).  True when it parses without overflow
 * and lies in [min, max].
 */
extern bool rp_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A decimal integer (a leading '-' only), true when it lies in [min, max]. */
extern bool rp_parse_int(const char *s, int min, int max, int *out);

/*
 * A boolean spelled the way the server's parse_bool() accepts it: true,
 * false, yes, no, on, off, 1, 0, case-insensitive, and any unique prefix
 * of the words ("t", "fa", "y", "n"; "on" and "of" at least).
 */
extern bool rp_parse_bool(const char *s, bool *out);

typedef enum RpMsgPass
{
	RP_MSG_PASS_YES,			/* the plugin sends messages with the prefix */
	RP_MSG_PASS_NO,				/* it filters them out */
	RP_MSG_PASS_UNKNOWN			/* a value the server will refuse anyway */
} RpMsgPass;

/*
 * Whether the plugin options include_messages and message_prefixes (NULL:
 * not given; "" for a bare -o NAME) let logical messages with prefix
 * through, the way the plugin decides it: include_messages is a boolean
 * (bare: true), message_prefixes a list of names split like
 * SplitIdentifierString (commas, unquoted names folded to lower case,
 * double-quoted ones taken as written, "" an empty list: every prefix).
 */
extern RpMsgPass rp_messages_pass(const char *include_messages, const char *message_prefixes,
								  const char *prefix);

/* Whether --sink names a kind of sink this program has. */
extern bool rp_cli_sink_known(const char *sink);

/* nats://... or tls://...: the NATS JetStream sink */
extern bool rp_cli_sink_is_nats(const char *sink);

/*
 * The kind of sink --sink names, for a label: "stdout", "file", "exec",
 * "postgresql", "nats" (never the rest of the string: it may hold a
 * password); "" when unknown.
 */
extern const char *rp_cli_sink_kind(const char *sink);

#endif							/* RP_CLIPARSE_H */
