/*
 * Fuzz target for the dataset parts a worker receives
 * (cfl_data_unpack_parts): the bytes a coordinator -- or anyone holding the
 * token and acting as one -- chooses.  When they unpack, they are packed
 * again, and that must unpack to the same bytes.  Any outcome is fine
 * except a crash, a leak, a hang or undefined behaviour.  `make fuzz
 * FUZZ=parts`; `make test` replays tests/fuzz/corpus/parts/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfl_data d, back;
	struct cfl_buf b, b2;
	struct cfl_err err;

	if (size > 1 << 20)
		return 0;
	if (cfl_data_unpack_parts(&d, data, size, &err))
		return 0;
	cfl_buf_init(&b);
	cfl_buf_init(&b2);
	if (cfl_data_pack_parts(&d, &b, &err) == 0 &&
	    cfl_data_unpack_parts(&back, b.data, b.len, &err) == 0) {
		if (cfl_data_pack_parts(&back, &b2, &err) == 0 &&
		    (b.len != b2.len || memcmp(b.data, b2.data, b.len)))
			abort();	/* a round trip changed the parts */
		cfl_data_release(&back);
	}
	cfl_buf_release(&b);
	cfl_buf_release(&b2);
	cfl_data_release(&d);
	return 0;
}
