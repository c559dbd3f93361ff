/*
 * The closest of some known names to a word a user typed (a column, a run):
 * what a "did you mean" suggests.  Edit distance with swaps of neighbours
 * (Damerau), case ignored or not: options and commands (src/cli/suggest.c)
 * compare case, and a name that starts with the word is close too.
 */
#include "cfl/core.h"

#include <ctype.h>
#include <string.h>

#define LONGEST 63	/* longer words are never close */

static size_t distance(const char *a, const char *b, int fold)
{
	size_t la = strlen(a), lb = strlen(b);
	static size_t d[LONGEST + 1][LONGEST + 1];	/* 32 KiB: not the stack */

	if (la > LONGEST || lb > LONGEST)
		return (size_t)-1;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int ai = fold ? tolower((unsigned char)a[i - 1]) : a[i - 1];
			int bj = fold ? tolower((unsigned char)b[j - 1]) : b[j - 1];
			int ai2 = i > 1 ? (fold ? tolower((unsigned char)a[i - 2]) : a[i - 2]) : 0;
			int bj2 = j > 1 ? (fold ? tolower((unsigned char)b[j - 2]) : b[j - 2]) : 0;
			size_t best = d[i - 1][j - 1] + (ai != bj);

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && ai == bj2 && ai2 == bj &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

const char *cfl_closest(const char *word, const char *const *names, size_t n)
{
	return cfl_closest_as(word, names, n, 0);
}

const char *cfl_closest_as(const char *word, const char *const *names,
			   size_t n, unsigned flags)
{
	size_t len = strlen(word), limit = len / 3 > 1 ? len / 3 : 1;
	size_t best_d = (size_t)-1;
	const char *best = NULL;

	for (size_t i = 0; i < n && len; i++) {
		size_t d;

		if (!names[i] || !strcmp(names[i], word))
			continue;
		d = distance(word, names[i], !(flags & CFL_CLOSEST_CASE));
		/* a known name that starts with the word, or the other way
		 * round ("--model" for "--models"), is close too */
		if ((flags & CFL_CLOSEST_PREFIX) && d > limit && strlen(names[i]) > 1 &&
		    (!strncmp(names[i], word, len) ||
		     !strncmp(word, names[i], strlen(names[i]))))
			d = limit;
		if (d <= limit && d < best_d) {
			best = names[i];
			best_d = d;
		}
	}
	return best;
}
