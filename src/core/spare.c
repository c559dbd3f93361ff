/*
 * Spare cores: a count, shared by a local pool and the workers it forks, of
 * the pool's slots that sit idle with nothing queued (the third of three
 * seeds on two processes leaves one so).  A trial that can split its work
 * over a second thread claims one and gives it back when it ends, or as
 * soon as the count goes below zero (the pool has work for the slot
 * again).  The page is mapped shared before the workers are forked, so
 * they see the pool's count (a `cfl worker`'s pool lends its own idle
 * workers' cores); a process without one (cfl train) never claims.  The ranks of one MPI job on one node
 * (mpirun's or srun's) share one count, a POSIX shared-memory object named
 * after the job, each pool adding what it offers: a rank with nothing to
 * do lends its core to another rank's trial.  A process offers for one
 * pool at a time (a study's or a relay's; the last offer is what the
 * process offers).  A model's result must not depend on whether it got a
 * core: only its time does.
 */
#include "cfl/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* MPI ranks on one node: each rank's workers at local rank x
 * CFL_SPARE_MAX_WORKERS in the table; ranks beyond SHARED_RANKS keep a
 * count of their own. */
#define SHARED_RANKS 16
#define TABLE (CFL_SPARE_MAX_WORKERS * SHARED_RANKS)

struct spare_page {
	_Atomic int count;		/* offered - claimed, over every pool */
	_Atomic int claims;		/* claims made since it was created */
	_Atomic int held[TABLE];	/* by worker index */
};

static struct spare_page *page;
static pid_t page_owner;	/* the pool process that mapped it */
static int offered;		/* the owner's: what it offers now */
static int base;		/* its workers' first index in the table */
static int self = -1;		/* a worker's index, -1 in the pool */
static unsigned char used[CFL_SPARE_MAX_WORKERS];	/* the owner's live workers */
static int claimed;		/* this process holds one */
static char shm_name[160];	/* the node's object, or "" */

/* The node's object for this MPI job and this rank's place in it: the
 * PMIx namespace (mpirun, srun --mpi=pmix) or Slurm's job and step, and
 * the local rank.  0 when not started so. */
static int mpi_node_object(char *name, size_t cap, int *first)
{
	const char *ns = getenv("PMIX_NAMESPACE"), *lr;
	char job[96], *end;
	long r;
	size_t i;

	lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
	if (!lr)
		lr = getenv("SLURM_LOCALID");
	if (!ns || !*ns) {
		const char *j = getenv("SLURM_JOB_ID"), *st = getenv("SLURM_STEP_ID");

		if (!j || !st)
			return 0;
		snprintf(job, sizeof(job), "%s.%s", j, st);
		ns = job;
	}
	if (!lr || !*lr)
		return 0;
	errno = 0;
	r = strtol(lr, &end, 10);
	if (errno || *end || r < 0 || r >= SHARED_RANKS)
		return 0;
	snprintf(name, cap, "/cfl-spare-%u-%s", (unsigned)getuid(), ns);
	for (i = 1; name[i]; i++)	/* one path component */
		if (name[i] == '/')
			name[i] = '_';
	*first = (int)r * CFL_SPARE_MAX_WORKERS;
	return 1;
}

void cfl_spare_unlink(void)
{
	if (shm_name[0] && page_owner == getpid())
		shm_unlink(shm_name);
	shm_name[0] = 0;
}

/* The node's shared count, or NULL (then the process maps its own). */
static struct spare_page *map_node_object(void)
{
	void *p;
	int fd;

	if (!mpi_node_object(shm_name, sizeof(shm_name), &base))
		return NULL;
	fd = shm_open(shm_name, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		goto none;
	/* whoever comes first sizes it (zeros); the others find it so */
	if (ftruncate(fd, sizeof(struct spare_page))) {
		close(fd);
		goto none;
	}
	p = mmap(NULL, sizeof(struct spare_page), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		goto none;
	return p;
none:
	shm_name[0] = 0;
	base = 0;
	return NULL;
}

int cfl_spare_init(struct cfl_err *err)
{
	void *p;

	if (page && page_owner == getpid())
		return 0;
	/* a worker that became a pool itself (a relay) counts its own */
	page_owner = getpid();
	offered = 0;
	self = -1;
	claimed = 0;
	memset(used, 0, sizeof(used));
	p = map_node_object();
	if (p) {
		page = p;
		return 0;
	}
	p = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		page = NULL;
		cfl_err_set(err, "cannot map the spare-core count");
		return -1;
	}
	page = p;
	memset(page, 0, sizeof(*page));
	return 0;
}

int cfl_spare_index(void)
{
	if (!page || page_owner != getpid())
		return -1;
	for (int i = 0; i < CFL_SPARE_MAX_WORKERS; i++)
		if (!used[i]) {
			used[i] = 1;
			return i;
		}
	return -1;
}

void cfl_spare_worker(int index)
{
	self = index >= 0 && index < CFL_SPARE_MAX_WORKERS ? base + index : -1;
	claimed = 0;
}

void cfl_spare_offer(int n)
{
	if (!page || page_owner != getpid())
		return;
	if (n < 0)
		n = 0;
	if (n != offered)
		atomic_fetch_add(&page->count, n - offered);
	offered = n;
}

void cfl_spare_lost(int index)
{
	if (!page || page_owner != getpid() || index < 0 ||
	    index >= CFL_SPARE_MAX_WORKERS)
		return;
	/* a worker that died holding one: it is free again */
	if (atomic_exchange(&page->held[base + index], 0))
		atomic_fetch_add(&page->count, 1);
	used[index] = 0;
}

int cfl_spare_claim(void)
{
	int c;

	if (!page || claimed || (self < 0 && page_owner != getpid()))
		return 0;
	c = atomic_load(&page->count);
	while (c > 0)
		if (atomic_compare_exchange_weak(&page->count, &c, c - 1)) {
			claimed = 1;
			atomic_fetch_add(&page->claims, 1);
			if (self >= 0)
				atomic_store(&page->held[self], 1);
			return 1;
		}
	return 0;
}

int cfl_spare_wanted(void)
{
	return claimed && atomic_load_explicit(&page->count, memory_order_relaxed) < 0;
}

void cfl_spare_return(void)
{
	if (!claimed)
		return;
	claimed = 0;
	if (self >= 0)
		atomic_store(&page->held[self], 0);
	atomic_fetch_add(&page->count, 1);
}

int cfl_spare_count(void)
{
	return page ? atomic_load(&page->count) : 0;
}

int cfl_spare_claims(void)
{
	return page ? atomic_load(&page->claims) : 0;
}
