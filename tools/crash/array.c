/*
 * array.c - a part of `delog crash` (its design: crash.h): the small array helpers every
 * part uses, declared in array.h: grow an array, sort and search one of uint64_t.  They
 * know nothing of the checker.  (iolayer/sim.c keeps its own binary search: the library
 * does not call into the tools.)
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

size_t cr_find_u64(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == x ? lo : SIZE_MAX;
}
