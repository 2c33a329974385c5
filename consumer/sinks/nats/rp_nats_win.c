/*
 * rp_nats_win.c
 *    The publish window's accounting (rp_nats_int.h): pure, so the unit
 *    tests check it; rp_nats_pub.c calls it under its lock.
 *
 * Every publish expects the stream's last sequence to be the one before
 * it (Nats-Expected-Last-Sequence), so the stream grows only by the
 * intended next message: one that is lost makes every later one of the
 * window fail (10071), and the stream holds an exact prefix of what was
 * meant.  An ack is as intended only when it stores the message at
 * exactly expected + 1 and is no duplicate (a Nats-Msg-Id found in the
 * duplicate window is answered before the sequence is checked).
 */
#include "rp_alloc.h"

#include "sinks/nats/rp_nats_int.h"

void
rp_nats_win_reset(RpNatsWin *w, int size, uint64_t last_seq)
{
	memset(w, 0, sizeof(*w));
	w->size = size;
	w->last_seq = last_seq;
	w->acked_seq = last_seq;
}

bool
rp_nats_win_full(const RpNatsWin *w)
{
	return w->in_flight >= w->size;
}

bool
rp_nats_win_room(const RpNatsWin *w, int64_t bytes)
{
	if (rp_nats_win_full(w))
		return false;
	return w->max_bytes <= 0 || w->bytes == 0 || w->bytes + bytes <= w->max_bytes;
}

void
rp_nats_win_charge(RpNatsWin *w, int64_t delta)
{
	w->bytes += delta;
	if (w->bytes < 0)
		w->bytes = 0;
}

uint64_t
rp_nats_win_send(RpNatsWin *w)
{
	w->in_flight++;
	return w->last_seq++;
}

static void
fail(RpNatsWin *w, RpNatsFailure f, int status, int err_code)
{
	if (f > w->failure)
	{
		w->failure = f;
		w->status = status;
		w->err_code = err_code;
	}
}

void
rp_nats_win_unsend(RpNatsWin *w, RpNatsFailure f, int status)
{
	w->in_flight--;
	w->last_seq--;
	fail(w, f, status, 0);
}

void
rp_nats_win_ack(RpNatsWin *w, uint64_t expected, uint64_t seq, bool dup)
{
	w->in_flight--;
	if (dup || seq != expected + 1)
	{
		fail(w, RP_NATS_FAIL_SEQUENCE, RP_NATS_ST_ANSWER, 0);
		return;
	}
	w->acked++;
	if (seq > w->acked_seq)
		w->acked_seq = seq;
}

void
rp_nats_win_nak(RpNatsWin *w, int status, int err_code, const char *text)
{
	w->in_flight--;
	fail(w, rp_nats_classify(status, err_code, text), status, err_code);
}

/*
 * Measured on nats-server 2.9.10: a wrong expected sequence is 10071; a
 * publish that finds no leader is no responders (10076); discard-new
 * limits answer 10077 naming the limit ("maximum bytes exceeded", also
 * messages); a message over the stream's or account's size is 10054.
 * Anything else (leader elections, "temporarily unavailable") is retried.
 */
RpNatsFailure
rp_nats_classify(int status, int err_code, const char *text)
{
	if (status == RP_NATS_ST_REFUSED)
		return RP_NATS_FAIL_FATAL;
	if (status == RP_NATS_ST_LOST)
		return RP_NATS_FAIL_RETRY;
	switch (err_code)
	{
		case 10071:
			return RP_NATS_FAIL_SEQUENCE;
		case 10077:
			return text &&strstr(text, "maximum") ? RP_NATS_FAIL_FULL : RP_NATS_FAIL_RETRY;

		case 10054:
			return RP_NATS_FAIL_FATAL;
		default:
			return RP_NATS_FAIL_RETRY;
	}
}
