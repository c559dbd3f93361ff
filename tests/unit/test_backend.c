/* Unit tests of the backend choice (src/run/backend.c): --backend values,
 * launcher detection from faked Open MPI and Slurm environments, the
 * default --jobs of a rank, and what a build without MPI says. */
#include "runner.h"

#include "cfl/backend.h"

/* A fake environment: NULL-terminated name/value pairs. */
static const char *const *fake_env;

static const char *fake_get(const char *name)
{
	for (size_t i = 0; fake_env && fake_env[i]; i += 2)
		if (strcmp(fake_env[i], name) == 0)
			return fake_env[i + 1];
	return NULL;
}

static void detect(struct cfl_launch *l, const char *const *env)
{
	fake_env = env;
	cfl_launch_detect(l, fake_get);
}

static void t_parse(void)
{
	struct cfl_err err;
	enum cfl_backend b = CFL_BACKEND_AUTO;

	CHECK(cfl_backend_parse("local", &b, &err) == 0 && b == CFL_BACKEND_LOCAL);
	CHECK(cfl_backend_parse("tcp", &b, &err) == 0 && b == CFL_BACKEND_TCP);
	CHECK(cfl_backend_parse("mpi", &b, &err) == 0 && b == CFL_BACKEND_MPI);
	CHECK(cfl_backend_parse("MPI", &b, &err) == -1);
	CHECK_CONTAINS(err.msg, "unknown backend 'MPI'");
	CHECK(cfl_backend_parse("", &b, &err) == -1);
	CHECK_STR(cfl_backend_name(CFL_BACKEND_MPI), "mpi");
	CHECK_STR(cfl_backend_name(CFL_BACKEND_AUTO), "auto");
}

static void t_detect_none(void)
{
	static const char *const env[] = { "HOME", "/root", NULL };
	struct cfl_launch l;

	detect(&l, env);
	CHECK(l.launcher == NULL);
	CHECK_INT(l.size, 1);
}

static void t_detect_openmpi(void)
{
	static const char *const env[] = {
		"OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "5",
		"OMPI_COMM_WORLD_LOCAL_SIZE", "3", NULL,
	};
	static const char *const one[] = {
		"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "1", NULL,
	};
	static const char *const bad[] = {
		"OMPI_COMM_WORLD_RANK", "7", "OMPI_COMM_WORLD_SIZE", "5", NULL,
	};
	static const char *const junk[] = {
		"OMPI_COMM_WORLD_RANK", "1x", "OMPI_COMM_WORLD_SIZE", "5", NULL,
	};
	struct cfl_launch l;

	detect(&l, env);
	CHECK_STR(l.launcher, "mpirun");
	CHECK_INT(l.rank, 2);
	CHECK_INT(l.size, 5);
	CHECK_INT(l.local_size, 3);
	/* mpirun -n 1 is not a cluster run; nonsense counts as absent */
	detect(&l, one);
	CHECK(l.launcher == NULL);
	detect(&l, bad);
	CHECK(l.launcher == NULL);
	detect(&l, junk);
	CHECK(l.launcher == NULL);
}

static void t_detect_slurm(void)
{
	static const char *const step[] = {
		"SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_STEP_ID", "0",
		"SLURM_STEP_TASKS_PER_NODE", "2(x2)", NULL,
	};
	/* the batch script of `sbatch -n 4`: an allocation, no step */
	static const char *const batch[] = {
		"SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_JOB_ID", "12", NULL,
	};
	/* srun inside mpirun's environment: Open MPI's variables win */
	static const char *const both[] = {
		"SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_STEP_ID", "3",
		"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "3", NULL,
	};
	struct cfl_launch l;

	detect(&l, step);
	CHECK_STR(l.launcher, "srun");
	CHECK_INT(l.rank, 1);
	CHECK_INT(l.size, 4);
	CHECK_INT(l.local_size, 2);
	detect(&l, batch);
	CHECK(l.launcher == NULL);
	detect(&l, both);
	CHECK_STR(l.launcher, "mpirun");
	CHECK_INT(l.rank, 1);
}

static void t_choose(void)
{
	static const char *const env[] = {
		"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "3", NULL,
	};
	struct cfl_launch none, mpirun;
	struct cfl_err err;
	enum cfl_backend b = CFL_BACKEND_AUTO;
	int detected = -1;

	detect(&none, NULL);
	detect(&mpirun, env);
	CHECK(cfl_backend_choose(CFL_BACKEND_AUTO, &none, 0, &b, &detected, &err) == 0);
	CHECK(b == CFL_BACKEND_LOCAL && detected == 0);
	CHECK(cfl_backend_choose(CFL_BACKEND_AUTO, &none, 1, &b, &detected, &err) == 0);
	CHECK(b == CFL_BACKEND_TCP && detected == 0);
	/* an explicit choice wins over the environment */
	CHECK(cfl_backend_choose(CFL_BACKEND_LOCAL, &mpirun, 0, &b, &detected, &err) == 0);
	CHECK(b == CFL_BACKEND_LOCAL && detected == 0);
	if (cfl_mpi_built_in()) {
		CHECK(cfl_backend_choose(CFL_BACKEND_AUTO, &mpirun, 0, &b,
					 &detected, &err) == 0);
		CHECK(b == CFL_BACKEND_MPI && detected == 1);
		CHECK(cfl_backend_choose(CFL_BACKEND_MPI, &none, 0, &b,
					 &detected, &err) == 0);
		CHECK(b == CFL_BACKEND_MPI && detected == 0);
	} else {
		CHECK(cfl_backend_choose(CFL_BACKEND_AUTO, &mpirun, 0, &b,
					 &detected, &err) == -1);
		CHECK_CONTAINS(err.msg, "started by mpirun as rank 0 of 3");
		CHECK_CONTAINS(err.msg, "--backend local");
		CHECK(cfl_backend_choose(CFL_BACKEND_MPI, &none, 0, &b,
					 &detected, &err) == -1);
		CHECK_CONTAINS(err.msg, "built without MPI");
		CHECK_CONTAINS(err.msg, "libopenmpi-dev");
	}
}

static void t_default_jobs(void)
{
	CHECK_INT(cfl_backend_default_jobs(16, 4), 4);
	CHECK_INT(cfl_backend_default_jobs(2, 3), 1);
	CHECK_INT(cfl_backend_default_jobs(8, 0), 8);
	CHECK_INT(cfl_backend_default_jobs(0, 0), 1);
	CHECK_INT(cfl_backend_default_jobs(10, 3), 3);
}

static void t_mpi_missing_or_uninitialised(void)
{
	struct cfl_mpi m;
	struct cfl_err err;
	struct cfl_buf b;
	int src;

	/* without MPI_Init no transport call may succeed or crash */
	memset(&m, 0, sizeof(m));
	cfl_buf_init(&b);
	CHECK(cfl_mpi_send(&m, 1, "x", 1, &err) == -1);
	CHECK(cfl_mpi_recv(&m, -1, &src, &b, 10, 0, &err) == -1);
	CHECK(cfl_mpi_finalize(&m, &err) == 0);
	if (!cfl_mpi_built_in()) {
		CHECK(cfl_mpi_init(&m, &err) == -1);
		CHECK_CONTAINS(err.msg, "built without MPI");
	}
	cfl_buf_release(&b);
}

const struct cfl_test cfl_tests[] = {
	TEST(t_parse),
	TEST(t_detect_none),
	TEST(t_detect_openmpi),
	TEST(t_detect_slurm),
	TEST(t_choose),
	TEST(t_default_jobs),
	TEST(t_mpi_missing_or_uninitialised),
	{ 0 },
};
