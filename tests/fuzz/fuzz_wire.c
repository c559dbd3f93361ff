/*
 * Fuzz target for the wire codec: read frames one after another from
 * arbitrary bytes, as a transport reads a stream; every frame that decodes
 * is encoded again and must decode to the same bytes (the codec is
 * canonical).  Any outcome is fine except a crash, a leak, undefined
 * behaviour or a broken round trip.  Run for real with
 * `make fuzz FUZZ=wire`; `make test` replays tests/fuzz/corpus/wire/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t pos = 0;

	while (pos < size) {
		struct cfl_wire_frame f;
		struct cfl_wire_msg m, m2;
		struct cfl_err err;
		struct cfl_buf b;
		int rc = cfl_wire_decode(data + pos, size - pos, &f, &m, &err);

		if (rc != 0)
			break;
		cfl_buf_init(&b);
		if (cfl_wire_encode(&b, f.seq, f.flags, &m, &err) != 0)
			abort();	/* what decodes must encode */
		/* same header and payload (the MAC trailer is the transport's) */
		if (b.len != f.size || memcmp(b.data, data + pos,
					      CFL_WIRE_HEADER_SIZE + f.length))
			abort();
		if (cfl_wire_decode(b.data, b.len, &f, &m2, &err) != 0)
			abort();
		cfl_wire_msg_release(&m2);
		cfl_wire_msg_release(&m);
		cfl_buf_release(&b);
		pos += f.size;
	}
	return 0;
}
