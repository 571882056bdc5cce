/*
 * array.h - the crash checker's array helpers (array.c).
 */
#ifndef DELOG_TOOLS_CRASH_ARRAY_H
#define DELOG_TOOLS_CRASH_ARRAY_H

#include <stddef.h>
#include <stdint.h>

/* Grow *@p (*@cap elements of @elem bytes) to hold at least @need, doubling from 64.
 * 0, or -ENOMEM with *@p and *@cap unchanged. */
int cr_grow(void **p, size_t *cap, size_t need, size_t elem);
/* qsort's comparison of two uint64_t. */
int cr_cmp_u64(const void *a, const void *b);

#endif
