/*
 * state.c - the record stream libdelog-raft keeps in delog, and the state it rebuilds.
 *
 * Invariants (draft.h gives the record formats and the crash argument):
 *  - draft_state_apply is the only code that changes a struct draft_state, both when the
 *    io logs a record (it applies what it just committed) and when recovery replays the
 *    log; so what load returns after a restart is what the running io had after the same
 *    prefix of calls.
 *  - Records are applied in key order; a key not above the last one is a damaged log.
 *  - The entries form one run [first, first + n); ents[i].seq never decreases with i
 *    (an entry is logged after every entry before it still in the run), which is what
 *    lets the io release every checkpoint below ents[0].seq after a snapshot.
 *  - Decoding never trusts a length: every record is checked against its item's size.
 */
#include "draft.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void draft_msgf(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, RAFT_ERRMSG_BUF_SIZE, fmt, ap);
	va_end(ap);
}

uint64_t draft_sum(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	/* FNV-1a, 64 bits: a checksum against damaged snapshot files, not a MAC. */
	if (!h)
		h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void draft_state_init(struct draft_state *s, char *why)
{
	memset(s, 0, sizeof(*s));
	s->first = 1;
	s->keep_data = true;
	s->why = why;
}

static void drop_from(struct draft_state *s, size_t k)
{
	for (size_t i = k; i < s->n; i++) {
		free(s->ents[i].data);
		s->ents[i].data = NULL;
		s->bytes -= DRAFT_ENTRY_HDR + s->ents[i].len;
	}
	if (k < s->n)
		s->n = k;
}

static void drop_prefix(struct draft_state *s, size_t k)
{
	if (k > s->n)
		k = s->n;
	for (size_t i = 0; i < k; i++) {
		free(s->ents[i].data);
		s->bytes -= DRAFT_ENTRY_HDR + s->ents[i].len;
	}
	memmove(s->ents, s->ents + k, (s->n - k) * sizeof(*s->ents));
	s->n -= k;
	s->first += k;
}

void draft_state_free(struct draft_state *s)
{
	drop_from(s, 0);
	free(s->ents);
	free(s->snap.conf);
	s->ents = NULL;
	s->snap.conf = NULL;
	s->n = s->cap = 0;
}

static int bad(struct draft_state *s, const char *what, uint64_t key)
{
	if (s->why)
		draft_msgf(s->why, "corrupt raft record %llu in the log: %s",
			   (unsigned long long)key, what);
	return RAFT_CORRUPT;
}

/* An ENTRY record: its header @r (DRAFT_ENTRY_HDR bytes) and its payload @data of @plen
 * bytes, which need not follow the header in memory. */
static int apply_entry(struct draft_state *s, uint64_t key, uint64_t seq, const unsigned char *r,
		       const unsigned char *data, uint32_t plen)
{
	raft_index index = get64(r + 1);
	struct draft_ent e = { .seq = seq, .term = get64(r + 9), .len = plen };
	raft_index next = s->first + s->n;

	e.type = (unsigned short)(r[17] | (r[18] << 8));
	if (index == 0 || e.term == 0)
		return bad(s, "entry with index or term 0", key);
	if (index < s->first || index > next) {
		/* Before the first entry kept, or after a gap: only where the log's released
		 * prefix held the entries before it (draft.h); draft_state_check refuses a
		 * run that does not join the snapshot in the end. */
		drop_from(s, 0);
		s->first = index;
	} else if (index < next) {
		drop_from(s, (size_t)(index - s->first));
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct draft_ent *ne = realloc(s->ents, cap * sizeof(*ne));

		if (!ne)
			return RAFT_NOMEM;
		s->ents = ne;
		s->cap = cap;
	}
	if (s->keep_data) {
		e.data = malloc(e.len ? e.len : 1);
		if (!e.data)
			return RAFT_NOMEM;
		if (e.len)
			memcpy(e.data, data, e.len);
	}
	s->ents[s->n++] = e;
	s->bytes += DRAFT_ENTRY_HDR + e.len;
	return 0;
}

static int apply_snap(struct draft_state *s, uint64_t key, const unsigned char *r, uint32_t len)
{
	struct draft_snapmeta m;

	if (len < 69)
		return bad(s, "short snapshot record", key);
	m.term = get64(r + 1);
	m.index = get64(r + 9);
	m.conf_index = get64(r + 17);
	m.trailing = get32(r + 25);
	m.file = get64(r + 29);
	m.size = get64(r + 37);
	m.sum = get64(r + 45);
	m.conf_len = get32(r + 53);
	/* r + 57: 12 bytes reserved (zero) */
	if (m.conf_len != len - 69 || m.index == 0 || m.term == 0 || m.file == 0)
		return bad(s, "bad snapshot record", key);
	m.conf = malloc(m.conf_len ? m.conf_len : 1);
	if (!m.conf)
		return RAFT_NOMEM;
	memcpy(m.conf, r + 69, m.conf_len);
	free(s->snap.conf);
	s->snap = m;
	s->has_snap = true;
	if (m.trailing == 0 || m.index >= s->first + s->n) {
		/* No trailing entries kept, or the snapshot is past the log's last entry (it
		 * cannot be joined): the log continues after it, as C-Raft's own io loads
		 * such a state (it discards the entries behind the snapshot). */
		drop_from(s, 0);
		s->first = m.index + 1;
	} else if (m.index > m.trailing && m.index - m.trailing >= s->first) {
		drop_prefix(s, (size_t)(m.index - m.trailing - s->first + 1));
	}
	return 0;
}

int draft_state_apply_entry(struct draft_state *s, uint64_t key, uint64_t seq, const void *hdr,
			    const void *data, uint32_t len)
{
	if (key <= s->last_key)
		return bad(s, "key out of order", key);
	if (((const unsigned char *)hdr)[0] != DRAFT_ENTRY)
		return bad(s, "not an entry record", key);
	s->last_key = key;
	return apply_entry(s, key, seq, hdr, data, len);
}

static int cmp_key(const void *a, const void *b)
{
	const struct delog_item *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

int draft_state_apply_ckpt(struct draft_state *s, uint64_t seq, const struct delog_item *it,
			   size_t n)
{
	struct delog_item *sorted;
	int rv = 0;

	if (n == 0)
		return 0;
	/* One copy per key, in an order delog does not promise: the keys give it. */
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return RAFT_NOMEM;
	memcpy(sorted, it, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_key);
	for (size_t i = 0; i < n && !rv; i++)
		rv = draft_state_apply(s, sorted[i].key, seq, sorted[i].data, sorted[i].len);
	free(sorted);
	return rv;
}

int draft_state_apply(struct draft_state *s, uint64_t key, uint64_t seq, const void *rec,
		      uint32_t len)
{
	const unsigned char *r = rec;

	if (key <= s->last_key)
		return bad(s, "key out of order", key);
	if (len < 1)
		return bad(s, "empty record", key);
	s->last_key = key;
	switch (r[0]) {
	case DRAFT_TERM:
		if (len != 9)
			return bad(s, "bad term record", key);
		s->term = get64(r + 1);
		s->vote = 0;
		return 0;
	case DRAFT_VOTE:
		if (len != 9)
			return bad(s, "bad vote record", key);
		s->vote = get64(r + 1);
		return 0;
	case DRAFT_BASE:
		if (len != 17)
			return bad(s, "bad base record", key);
		s->term = get64(r + 1);
		s->vote = get64(r + 9);
		return 0;
	case DRAFT_ENTRY:
		if (len < DRAFT_ENTRY_HDR)
			return bad(s, "short entry record", key);
		return apply_entry(s, key, seq, r, r + DRAFT_ENTRY_HDR, len - DRAFT_ENTRY_HDR);
	case DRAFT_TRUNC: {
		raft_index index;

		if (len != 9)
			return bad(s, "bad truncate record", key);
		index = get64(r + 1);
		if (index == 0)
			return bad(s, "truncate at 0", key);
		if (index <= s->first) {
			drop_from(s, 0);
			s->first = index;
		} else if (index < s->first + s->n) {
			drop_from(s, (size_t)(index - s->first));
		}
		return 0;
	}
	case DRAFT_SNAP:
		return apply_snap(s, key, r, len);
	default:
		return bad(s, "unknown record kind", key);
	}
}

int draft_state_check(struct draft_state *s)
{
	if (s->has_snap) {
		if (s->first > s->snap.index + 1 || s->first + s->n < s->snap.index + 1)
			return bad(s, "entries do not join the snapshot", s->last_key);
	} else if (s->n > 0 && s->first != 1) {
		return bad(s, "entries without a snapshot do not start at 1", s->last_key);
	}
	return 0;
}

raft_index draft_state_last(const struct draft_state *s, raft_term *term)
{
	if (s->n) {
		*term = s->ents[s->n - 1].term;
		return s->first + s->n - 1;
	}
	if (s->has_snap && s->first == s->snap.index + 1) {
		*term = s->snap.term;
		return s->snap.index;
	}
	*term = 0;
	return s->first - 1;
}

static void *rec1(int kind, uint64_t a, uint32_t *len)
{
	unsigned char *r = malloc(9);

	if (r) {
		r[0] = (unsigned char)kind;
		put64(r + 1, a);
		*len = 9;
	}
	return r;
}

void *draft_rec_term(raft_term term, uint32_t *len)
{
	return rec1(DRAFT_TERM, term, len);
}

void *draft_rec_vote(raft_id id, uint32_t *len)
{
	return rec1(DRAFT_VOTE, id, len);
}

void *draft_rec_trunc(raft_index index, uint32_t *len)
{
	return rec1(DRAFT_TRUNC, index, len);
}

void *draft_rec_base(raft_term term, raft_id vote, uint32_t *len)
{
	unsigned char *r = malloc(17);

	if (r) {
		r[0] = DRAFT_BASE;
		put64(r + 1, term);
		put64(r + 9, vote);
		*len = 17;
	}
	return r;
}

void *draft_rec_snap(const struct draft_snapmeta *m, uint32_t *len)
{
	unsigned char *r = calloc(1, 69 + (size_t)m->conf_len);

	if (!r)
		return NULL;
	r[0] = DRAFT_SNAP;
	put64(r + 1, m->term);
	put64(r + 9, m->index);
	put64(r + 17, m->conf_index);
	put32(r + 25, m->trailing);
	put64(r + 29, m->file);
	put64(r + 37, m->size);
	put64(r + 45, m->sum);
	put32(r + 53, m->conf_len);
	memcpy(r + 69, m->conf, m->conf_len);
	*len = 69 + m->conf_len;
	return r;
}

void draft_rec_entry_hdr(unsigned char *hdr, raft_index index, const struct raft_entry *e)
{
	hdr[0] = DRAFT_ENTRY;
	put64(hdr + 1, index);
	put64(hdr + 9, e->term);
	hdr[17] = (unsigned char)(e->type & 0xff);
	hdr[18] = (unsigned char)(e->type >> 8);
}

int draft_conf_encode(const struct raft_configuration *c, void **buf, uint32_t *len)
{
	size_t n = 4;
	unsigned char *p;

	for (unsigned i = 0; i < c->n; i++)
		n += 16 + strlen(c->servers[i].address);
	if (n > UINT32_MAX)
		return RAFT_TOOBIG;
	p = malloc(n);
	if (!p)
		return RAFT_NOMEM;
	*buf = p;
	*len = (uint32_t)n;
	put32(p, c->n);
	p += 4;
	for (unsigned i = 0; i < c->n; i++) {
		size_t al = strlen(c->servers[i].address);

		put64(p, c->servers[i].id);
		put32(p + 8, (uint32_t)c->servers[i].role);
		put32(p + 12, (uint32_t)al);
		memcpy(p + 16, c->servers[i].address, al);
		p += 16 + al;
	}
	return 0;
}

int draft_conf_decode(const void *buf, uint32_t len, struct raft_configuration *c)
{
	const unsigned char *p = buf, *end = p + len;
	uint32_t n;

	raft_configuration_init(c);
	if (len < 4)
		return RAFT_CORRUPT;
	n = get32(p);
	p += 4;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t al;
		char *addr;
		int rv;

		if (end - p < 16)
			goto corrupt;
		al = get32(p + 12);
		if ((size_t)(end - p) - 16 < al)
			goto corrupt;
		addr = malloc((size_t)al + 1);
		if (!addr) {
			raft_configuration_close(c);
			return RAFT_NOMEM;
		}
		memcpy(addr, p + 16, al);
		addr[al] = '\0';
		rv = raft_configuration_add(c, get64(p), addr, (int)get32(p + 8));
		free(addr);
		if (rv) {
			raft_configuration_close(c);
			return rv == RAFT_NOMEM ? rv : RAFT_CORRUPT;
		}
		p += 16 + al;
	}
	if (p != end)
		goto corrupt;
	return 0;
corrupt:
	raft_configuration_close(c);
	return RAFT_CORRUPT;
}
