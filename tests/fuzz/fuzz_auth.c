/*
 * Fuzz target for the remote-worker handshake parser (src/run/auth.c): the
 * first byte picks the role (worker or coordinator) and how the rest is cut
 * into reads; the handshake is fed those bytes until it finishes, fails or
 * stops consuming.  Any outcome is fine except a crash, a read out of
 * bounds or a leak.  Run for real with `make fuzz FUZZ=auth`; `make test`
 * replays tests/fuzz/corpus/auth/.
 */
#include <stdint.h>
#include <string.h>

#include "cfl/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfl_auth a;
	struct cfl_token tok;
	struct cfl_mac mac;
	struct cfl_buf out;
	struct cfl_err err;
	size_t pos = 1, piece;

	if (size < 1 || size > 1 << 14)
		return 0;
	memset(&tok, 0, sizeof(tok));
	tok.len = 20;
	memcpy(tok.key, "fuzzing token 123456", 20);
	piece = (size_t)(data[0] >> 1) + 1;
	cfl_buf_init(&out);
	if (cfl_auth_init(&a, data[0] & 1 ? CFL_AUTH_WORKER : CFL_AUTH_COORDINATOR,
			  &tok, &out, &err) == 0) {
		size_t avail = 0;

		/* bytes arrive `piece` at a time; whatever is unconsumed stays */
		while (pos < size) {
			size_t used = 0;
			int rc;

			avail += piece;
			if (pos + avail > size)
				avail = size - pos;
			rc = cfl_auth_step(&a, data + pos, avail, &used, &out, &mac,
					   &err);
			if (rc != 0)
				break;
			pos += used;
			avail -= used;
			if (!used && pos + avail >= size)
				break;
		}
	}
	cfl_auth_release(&a);
	cfl_buf_release(&out);
	/* the frame MAC check on the remaining bytes, with zero keys */
	memset(&mac, 0, sizeof(mac));
	if (size >= 1 + 32 + 8) {
		uint64_t seq;

		memcpy(&seq, data + 1, 8);
		cfl_mac_check(&mac, seq, data + 1 + 32, size - 1 - 32, data + 1 + 8,
			      &err);
	}
	return 0;
}
