/*
 * array.c - a part of `delog crash` (its design: crash.h): the small array helpers every
 * part uses, declared in array.h: grow an array, sort one of uint64_t.  They know
 * nothing of the checker.  (A sector is found in an unstable list by the sim's own
 * iol_sim_unstable_index: the list is the sim's.)
 */
#include "array.h"

#include <errno.h>
#include <stdlib.h>

int cr_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void *q;
	size_t c;

	if (need <= *cap)
		return 0;
	c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

int cr_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}
