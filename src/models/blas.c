/*
 * Which OpenBLAS kernels run the models' products (see cfl/model.h): when
 * OpenBLAS did not recognise the CPU and fell back to kernels older than
 * it, cfl asks for the right ones through OPENBLAS_CORETYPE and runs
 * itself again.
 */
#include "cfl/model.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *cfl_blas_core(void)
{
	const char *c = openblas_get_corename();

	return c && *c ? c : "unknown";
}

const char *cfl_blas_better_core(const char *core, int avx2_fma, int avx512)
{
	/* OpenBLAS's x86-64 kernels without AVX2 (its fallbacks among them) */
	static const char *const old[] = {
		"prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge",
		"atom", "katmai", "coppermine", "northwood", "banias", "athlon",
		"opteron", "opteron_sse3", "barcelona", "bobcat", "bulldozer",
		"piledriver", "steamroller", "excavator", "nano", "unknown",
	};
	int is_old = 0;

	if (!core || (!avx2_fma && !avx512))
		return NULL;
	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
		if (!strcasecmp(core, old[i]))
			is_old = 1;
	if (!is_old)
		return NULL;
	return avx512 ? "SkylakeX" : "Haswell";
}

void cfl_blas_pick_core(char **argv)
{
#if defined(__x86_64__) && defined(__GNUC__)
	const char *want, *preload = getenv("LD_PRELOAD");

	if (getenv("OPENBLAS_CORETYPE"))
		return;	/* the user's choice, or this is the second run */
	if (preload && strstr(preload, "vgpreload"))
		return;	/* under valgrind: an exec would leave it */
	__builtin_cpu_init();
	want = cfl_blas_better_core(
		cfl_blas_core(),
		__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
		__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
			__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
			__builtin_cpu_supports("avx512vl"));
	if (!want || setenv("OPENBLAS_CORETYPE", want, 1))
		return;
	execv("/proc/self/exe", argv);
	unsetenv("OPENBLAS_CORETYPE");	/* no /proc: run on with these kernels */
#else
	(void)argv;
#endif
}
