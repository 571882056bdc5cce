/*
 * ids.h - the item `delog stress` writes and `delog recover --ids` reads back: one
 * self-checking item per transaction, so a recovery can list exactly which acknowledged
 * ids survived a SIGKILL (tests/crash/kill_test.sh).
 *
 * An id is (thread << 40) | counter, counter from 1 per thread, printed in decimal.  The
 * item's key is the id; its data is struct ids_item, whose check field is a hash of the
 * id, so a torn, stale or foreign item is never taken for an id.  Items that are not ids
 * (another application's log) are counted, not printed.
 */
#ifndef DELOG_TOOLS_IDS_H
#define DELOG_TOOLS_IDS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define IDS_MAGIC 0x31534449u /* "IDS1" */
#define IDS_THREAD_SHIFT 40

struct ids_item {
	uint32_t magic;
	uint32_t thread;
	uint64_t counter;
	uint64_t id;
	uint64_t check;
};

static inline uint64_t ids_id(uint32_t thread, uint64_t counter)
{
	return ((uint64_t)thread << IDS_THREAD_SHIFT) | counter;
}

static inline uint64_t ids_check(uint64_t id)
{
	uint64_t z = id ^ 0x1d5c0ffee1d5ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void ids_make(uint32_t thread, uint64_t counter, struct ids_item *it)
{
	it->magic = IDS_MAGIC;
	it->thread = thread;
	it->counter = counter;
	it->id = ids_id(thread, counter);
	it->check = ids_check(it->id);
}

/* Decode a recovered item; false if it is not an id item (or is damaged). */
static inline bool ids_parse(uint64_t key, const void *data, uint32_t len, struct ids_item *out)
{
	if (!data || len != sizeof(*out))
		return false;
	memcpy(out, data, sizeof(*out));
	return out->magic == IDS_MAGIC && out->id == key &&
	       out->id == ids_id(out->thread, out->counter) && out->check == ids_check(key);
}

#endif
