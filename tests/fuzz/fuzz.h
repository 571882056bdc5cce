/*
 * fuzz.h - what the fuzz targets (fuzz_record.c, fuzz_recover.c) share with each other
 * and with the standalone driver (driver.c).
 *
 * A target is one LLVMFuzzerTestOneInput; it is linked either with libFuzzer (clang,
 * -DDELOG_FUZZ=ON) or with driver.c, which replays a corpus and a fixed-seed stream of
 * pseudo-random inputs so that an ordinary gcc build exercises the same harness.  Each
 * target also supplies fuzz_seed(), its built-in seed inputs: the driver runs them
 * before anything else and `--write-seeds DIR` writes them out, which is how the
 * committed corpus (tests/fuzz/corpus/<target>/) was produced.  In a libFuzzer build
 * fuzz_seed() is compiled but unused.
 *
 * The input is consumed front to back through struct fz: reads past the end yield
 * zeroes, so every byte string is a valid input and truncating one keeps its meaning
 * for the bytes that remain (which suits libFuzzer's mutations).
 *
 * Any property a harness checks is enforced with FZ_CHECK, which prints the condition
 * and calls abort(): libFuzzer and the driver both report that as a crash, and the
 * input that caused it is what reproduces it.
 */
#ifndef DELOG_FUZZ_H
#define DELOG_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Seed input @idx of this target into @buf (@cap bytes): its length, or 0 once @idx is
 * past the last seed. */
size_t fuzz_seed(unsigned idx, uint8_t *buf, size_t cap);

#define FZ_CHECK(cond)                                                                             \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A cursor over the input. */
struct fz {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->p++;
}

static inline uint16_t fz_u16(struct fz *f)
{
	uint16_t v = fz_u8(f);

	return (uint16_t)(v | (uint16_t)fz_u8(f) << 8);
}

static inline uint32_t fz_u32(struct fz *f)
{
	uint32_t v = fz_u16(f);

	return v | (uint32_t)fz_u16(f) << 16;
}

static inline uint64_t fz_u64(struct fz *f)
{
	uint64_t v = fz_u32(f);

	return v | (uint64_t)fz_u32(f) << 32;
}

/* Copy up to @len input bytes to @dst, zero-filling what the input lacks; returns how
 * many came from the input. */
static inline size_t fz_bytes(struct fz *f, void *dst, size_t len)
{
	size_t k = len < f->n ? len : f->n;

	memcpy(dst, f->p, k);
	memset((unsigned char *)dst + k, 0, len - k);
	f->p += k;
	f->n -= k;
	return k;
}

/* A seed being written by fuzz_seed(): appends little-endian values, silently stopping
 * at the capacity (the driver's buffer is far larger than any seed). */
struct fzw {
	uint8_t *p;
	size_t n, cap;
};

static inline void fzw_u8(struct fzw *w, uint8_t v)
{
	if (w->n < w->cap)
		w->p[w->n++] = v;
}

static inline void fzw_u16(struct fzw *w, uint16_t v)
{
	fzw_u8(w, (uint8_t)v);
	fzw_u8(w, (uint8_t)(v >> 8));
}

static inline void fzw_u32(struct fzw *w, uint32_t v)
{
	fzw_u16(w, (uint16_t)v);
	fzw_u16(w, (uint16_t)(v >> 16));
}

static inline void fzw_u64(struct fzw *w, uint64_t v)
{
	fzw_u32(w, (uint32_t)v);
	fzw_u32(w, (uint32_t)(v >> 32));
}

static inline void fzw_bytes(struct fzw *w, const void *src, size_t len)
{
	const uint8_t *s = src;

	for (size_t i = 0; i < len; i++)
		fzw_u8(w, s[i]);
}

/* FNV-1a over @len bytes, byte by byte in C: unlike the CRC (ISA-L assembly, which the
 * sanitizers do not instrument), every byte read here is checked by ASan. */
static inline uint64_t fz_touch(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#endif
