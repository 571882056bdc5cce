/*
 * recover_rec.c - what every step of recovery asks of one record, and how damage is
 * reported: is the record at an address one of this log's and of that address's lap
 * (jrnl_rcv_check_rec), how far it claims to reach (jrnl_rcv_rec_span), and the first
 * corruption found (jrnl_rcv_corrupt, jrnl_rcv_hard_damage).
 *
 * Why a file of its own.  Recovery is two files, recover.c (the head and the tail, the
 * checks past the head, stamping) and recover_pass.c (the main pass, which recover.c
 * calls); both check records and report damage the same way.  Kept here, below both, so
 * that neither calls back into the other: recover.c -> recover_pass.c -> recover_rec.c.
 */
#include "format.h"
#include "record.h"
#include "recover_rec.h"

#include <delog.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* After sectors failed to read: can the device still read its superblock area?  If not,
 * the device failed, not the sectors, and its -EIO is the run's error. */
static int device_reads(struct rctx *r)
{
	unsigned char *b = iol_buf_alloc(r->dev, r->S);
	int err = b ? 0 : -ENOMEM;

	if (b)
		err = iol_rw_wait(r->dev, IOL_OPF(IOL_OP_READ, 0), 0, b, r->S, NULL);
	free(b);
	return err;
}

/*
 * One read of the sectors at addresses [a, a + n), none of them crossing the physical
 * end.  A read error fails only the request, so it is read again a sector at a time:
 * a sector that still fails is unknown (R14), zeroed here so that no step can take it
 * for a record or for a cycle of any lap, and remembered for the report.  When every
 * sector fails and the superblock area cannot be read either, the device failed: -EIO.
 */
static int read_run(struct rctx *r, uint64_t a, uint64_t n, unsigned char *p)
{
	uint64_t failed = 0;
	unsigned nr = 0;
	int err;

	err = iol_rw_wait(r->dev, IOL_OPF(IOL_OP_READ, 0), jrnl_rcv_dev_off(r, a), p, n * r->S,
			  &nr);
	r->rep->read_reqs += nr;
	r->rep->bytes_read += n * r->S;
	if (err != -EIO)
		return err;
	for (uint64_t i = 0; i < n; i++) {
		unsigned char *q = p + i * r->S;

		err = iol_rw_wait(r->dev, IOL_OPF(IOL_OP_READ, 0), jrnl_rcv_dev_off(r, a + i), q,
				  r->S, &nr);
		r->rep->read_reqs += nr;
		r->rep->bytes_read += r->S;
		if (err == -EIO) {
			jrnl_rcv_unreadable(r, a + i);
			memset(q, 0, r->S);
			failed++;
		} else if (err) {
			return err;
		}
	}
	return failed == n ? device_reads(r) : 0;
}

int jrnl_rcv_read(struct rctx *r, uint64_t a, uint64_t n, void *buf)
{
	unsigned char *p = buf;

	if (r->rep->max_reads_in_flight < 1)
		r->rep->max_reads_in_flight = 1;
	while (n) {
		uint64_t k = min64(n, r->N - a % r->N);
		int err = read_run(r, a, k, p);

		if (err)
			return err;
		a += k;
		n -= k;
		p += k * r->S;
	}
	return 0;
}

void jrnl_rcv_unreadable(struct rctx *r, uint64_t a)
{
	struct jrnl_report *rep = r->rep;
	uint64_t s = a % r->N;

	if (!r->bad && !r->bad_lost) {
		r->bad = calloc(1, (size_t)((r->N + 7) / 8));
		r->bad_lost = !r->bad;
	}
	if (r->bad) {
		if (r->bad[s / 8] & (1u << (s % 8)))
			return; /* read again: counted once */
		r->bad[s / 8] |= (uint8_t)(1u << (s % 8));
	}
	if (!rep->unreadable_sectors || jrnl_rcv_dev_off(r, a) < rep->unreadable_offset)
		rep->unreadable_offset = jrnl_rcv_dev_off(r, a);
	rep->unreadable_sectors++;
}

bool jrnl_rcv_any_unreadable(const struct rctx *r, uint64_t a, uint64_t e, uint64_t *at)
{
	if (!r->rep->unreadable_sectors)
		return false;
	for (uint64_t x = a; x < e && x - a < r->N; x++) {
		uint64_t s = x % r->N;

		if (!r->bad || r->bad[s / 8] & (1u << (s % 8))) {
			*at = x; /* without the map, the first of the range stands for it */
			return true;
		}
	}
	return false;
}

/*
 * Record the first corruption found: its code, where, the on-disk field it found wrong
 * (@field, a static string as docs/FORMAT.md names it, "" when no one field is) and
 * what; returns @code so that callers can `return jrnl_rcv_corrupt(...)`.  Only the
 * first call counts, because everything after the first damage is unreliable.
 */
int jrnl_rcv_corrupt(struct rctx *r, int code, uint64_t a, uint64_t off, const char *field,
		     const char *fmt, ...)
{
	struct jrnl_report *rep = r->rep;
	va_list ap;

	if (rep->corruption)
		return rep->corruption;
	rep->corruption = code;
	r->corrupt_a = a;
	rep->corrupt_lsn = jrnl_rcv_addr_lsn(r, a);
	rep->corrupt_offset = off;
	rep->corrupt_field = field;
	va_start(ap, fmt);
	vsnprintf(rep->corrupt_what, sizeof(rep->corrupt_what), fmt, ap);
	va_end(ap);
	return code;
}

/* Sectors the record starting at @p claims (H + P), or 1 if that sector is no header
 * jrnl_rec_check could accept: how much to read before checking it. */
uint64_t jrnl_rcv_rec_span(const struct rctx *r, const unsigned char *p)
{
	uint32_t lim = JRNL_MAX_LOGBSIZE / r->S, h, n;

	if (rd32(p) != JRNL_REC_MAGIC)
		return 1;
	h = rd32(p + offsetof(struct jrnl_rec, hdr_sectors));
	n = rd32(p + offsetof(struct jrnl_rec, payload_sectors));
	return h && h <= lim && n <= lim ? (uint64_t)h + n : 1;
}

/*
 * Check the record at address @a, @n sectors of it at @p: jrnl_rec_check, then that its
 * cycle is the lap's at that address (a valid record of an older lap is stale).
 * Returns JRNL_REC_OK and fills @ri, a jrnl_rec_verdict, or REC_WRONG_LAP.
 */
int jrnl_rcv_check_rec(const struct rctx *r, const unsigned char *p, uint64_t n, uint64_t a,
		       struct rinfo *ri)
{
	const struct jrnl_rec *h;
	enum jrnl_rec_verdict v;

	v = jrnl_rec_check(p, (size_t)(n * r->S), r->S, r->N, (uint32_t)(a % r->N), r->g->uuid, &h);
	if (v != JRNL_REC_OK)
		return v;
	if (h->cycle != jrnl_rcv_lap_cycle(a / r->N))
		return REC_WRONG_LAP;
	ri->a = a;
	ri->h = h->hdr_sectors;
	ri->p = h->payload_sectors;
	ri->end = a + ri->h + ri->p;
	ri->len = h->len;
	ri->num_ops = h->num_ops;
	ri->lsn = h->lsn;
	ri->tail_lsn = h->tail_lsn;
	ri->durable_lsn = h->durable_lsn;
	ri->prev_lsn = h->prev_lsn;
	return JRNL_REC_OK;
}

int jrnl_rcv_hard_damage(struct rctx *r, int v, uint64_t a, const unsigned char *p)
{
	if (v == JRNL_REC_GEOMETRY)
		return jrnl_rcv_corrupt(r, DELOG_EGEOMETRY, a, jrnl_rcv_dev_off(r, a), "",
					"record header at sector %llu does not fit %u-byte sectors and a "
					"log of %llu sectors: written under another geometry",
					(unsigned long long)(a % r->N), r->S,
					(unsigned long long)r->N);
	if (v == JRNL_REC_FOREIGN)
		return jrnl_rcv_corrupt(r, DELOG_EFOREIGN, a, jrnl_rcv_dev_off(r, a), "rec.uuid",
					"record at sector %llu belongs to another log (uuid mismatch)",
					(unsigned long long)(a % r->N));
	return jrnl_rcv_corrupt(r, DELOG_EVERSION, a, jrnl_rcv_dev_off(r, a), "rec.version",
				"record at sector %llu has format version %u",
				(unsigned long long)(a % r->N),
				rd32(p + offsetof(struct jrnl_rec, version)));
}
