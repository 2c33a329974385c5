/*
 * rp_natsio_info.c
 *    A stream's state as its leader tells it.  In a cluster only the
 *    stream's leader answers STREAM.INFO, except while the stream's group
 *    has no leader: then every member answers with its own store, and a
 *    member that was down holds fewer messages than the stream does
 *    (nats-server 2.9, jsStreamInfoRequest).  Such an answer says so with
 *    an empty Cluster.Leader; reading it as the stream's end made the
 *    source halt on a checkpoint "past the end" of a stream that was only
 *    electing a leader.  A server outside a cluster sends no cluster
 *    block at all (seen on 2.9.10): its answer is its own, and it stands.
 */
#include "rp_alloc.h"

#ifdef RP_HAVE_NATS

#include "natsio/rp_natsio.h"

int
rp_natsio_stream_info(jsCtx *js, const char *stream, jsStreamInfo **si, natsStatus * st,
					  jsErrCode * code)
{
	*si = NULL;
	*code = 0;
	*st = js_GetStreamInfo(si, js, stream, NULL, code);
	if (*st != NATS_OK)
	{
		*si = NULL;
		return -1;
	}

	/*
	 * no Cluster at all: a server outside a cluster, whose store is the
	 * stream
	 */
	if ((*si)->Cluster != NULL &&
		((*si)->Cluster->Leader == NULL || (*si)->Cluster->Leader[0] == '\0'))
	{
		jsStreamInfo_Destroy(*si);
		*si = NULL;
		return 1;
	}
	return 0;
}

#endif							/* RP_HAVE_NATS */
