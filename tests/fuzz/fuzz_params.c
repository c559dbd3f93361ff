/*
 * Fuzz target for the params language: parse arbitrary bytes (with and
 * without the linear model's schema, chosen by the first byte); when that
 * works, format the space and parse it back, then ask a few proposals of
 * each search method.  Any outcome is fine except a crash, a leak, a hang
 * or undefined behaviour.  `make fuzz FUZZ=params`; `make test` replays
 * tests/fuzz/corpus/params/.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfl/hpo.h"

static void try_search(const struct cfl_space *sp, enum cfl_search_method m,
		       int n)
{
	struct cfl_search_opts o;
	struct cfl_search *s;
	struct cfl_params p;
	struct cfl_err err;

	cfl_search_opts_init(&o);
	o.method = m;
	o.grid_points = 3;
	o.seed = 1;
	s = cfl_search_new(sp, &o, &err);
	if (!s)
		return;
	cfl_params_init(&p);
	for (int i = 0; i < n; i++) {
		size_t idx;

		if (cfl_search_ask(s, &p, &idx, &err))
			break;
		cfl_search_tell(s, idx, i % 3 == 2 ? NAN : (double)(i * 7 % 5), &err);
	}
	cfl_params_release(&p);
	cfl_search_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct cfl_model_ops *ops = NULL;
	struct cfl_space s, back;
	struct cfl_err err;
	struct cfl_buf b;

	if (size > 1 << 14)
		return 0;
	if (size && data[0] == '!')
		ops = cfl_model_find("linear");
	if (cfl_space_parse(&s, "fuzz.params", (const char *)data, size, ops, &err))
		return 0;
	cfl_buf_init(&b);
	if (cfl_space_format(&s, &b) == 0 &&
	    cfl_space_parse(&back, "back", b.data ? b.data : "", b.len, ops,
			    &err) == 0)
		cfl_space_release(&back);
	cfl_buf_release(&b);
	try_search(&s, CFL_SEARCH_RANDOM, 6);
	try_search(&s, CFL_SEARCH_GRID, 6);
	if (cfl_space_n_free(&s) <= 4)
		try_search(&s, CFL_SEARCH_BO, 8);
	cfl_space_release(&s);
	return 0;
}
