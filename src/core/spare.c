/*
 * Spare cores: a count, shared by a local pool and the workers it forks, of
 * the pool's slots that sit idle with nothing queued (the third of three
 * seeds on two processes leaves one so).  A trial that can split its work
 * over a second thread claims one and gives it back when it ends, or as
 * soon as the count goes below zero (the pool has work for the slot
 * again).  The page is mapped shared before the workers are forked, so
 * they see the pool's count; a process that did not map one (cfl train, a
 * TCP worker's trial, MPI ranks' peers) never claims.  A model's result
 * must not depend on whether it got a core: only its time does.
 */
#include "cfl/core.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct spare_page {
	_Atomic int count;		/* offered - claimed */
	_Atomic int claims;		/* claims made since the page was mapped */
	_Atomic int held[CFL_SPARE_MAX_WORKERS];	/* by worker index */
};

static struct spare_page *page;
static pid_t page_owner;	/* the pool process that mapped it */
static int offered;		/* the owner's: what it offers now */
static int self = -1;		/* a worker's index, -1 in the pool */
static int claimed;		/* this process holds one */

int cfl_spare_init(struct cfl_err *err)
{
	void *p;

	if (page && page_owner == getpid())
		return 0;
	/* a worker that became a pool itself (a relay) counts its own */
	p = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		cfl_err_set(err, "cannot map the spare-core count");
		return -1;
	}
	page = p;
	memset(page, 0, sizeof(*page));
	page_owner = getpid();
	offered = 0;
	self = -1;
	claimed = 0;
	return 0;
}

void cfl_spare_worker(int index)
{
	self = index >= 0 && index < CFL_SPARE_MAX_WORKERS ? index : -1;
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
	if (atomic_exchange(&page->held[index], 0))
		atomic_fetch_add(&page->count, 1);
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
