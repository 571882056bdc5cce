/*
 * kv.c - delog-raft-kv: a replicated key-value daemon, one process per node, on C-Raft
 * with its log, term, vote and snapshots in delog (libdelog-raft), or, for comparison,
 * in C-Raft's own segment files (--storage uv).  The example users copy from.
 *
 * Clients speak a line protocol on the node's client port (raft port + 1000 unless
 * --client-offset says otherwise), one request per line, replies in request order:
 *   SET KEY VALUE   -> OK                       once the entry is committed and applied
 *   GET KEY         -> VALUE V | NOTFOUND       after a barrier: linearizable
 *   DIGEST          -> DIGEST COUNT HASH APPLIED   this node's map, no Raft round
 *   STATUS          -> STATUS id=ID state=STATE leader=ID last=INDEX commit=INDEX
 *                      applied=INDEX (leader 0: none known)
 *   MEMBERS         -> MEMBERS ID=HOST:PORT/ROLE[/seen] ...  this node's configuration
 *   ADD ID HOST:PORT, PROMOTE ID [ROLE], REMOVE ID  -> OK once the leader committed
 *                      the new configuration (C-Raft's raft_add, raft_assign, raft_remove)
 *   anything else   -> ERR ...; SET/GET/ADD/PROMOTE/REMOVE on a follower:
 *                      ERR not-leader ID HOST:PORT (the leader's client address) or
 *                      ERR no-leader
 * KEY is one word (no spaces); VALUE the rest of the line.
 *
 * Invariants and orderings:
 *  - Every entry's size is a multiple of 8 (zero padding after the value): C-Raft
 *    0.15's TCP transport sends entries back to back but decodes them 8-byte aligned.
 *  - The map changes only in the FSM's apply and restore, which C-Raft calls in log
 *    order on the loop: every node's map is a function of the committed prefix.
 *  - OK is written only from raft_apply's callback with status 0 (committed and
 *    applied); every other outcome is an ERR, and a SET that got ERR may still commit
 *    (the client cannot tell, as with any replicated store).
 *  - Replies go out in request order per connection: each request takes a slot in the
 *    connection's queue when read; slots are written in order once filled.
 *  - A connection closed with requests in flight stays allocated until their
 *    callbacks ran (refs).
 *  - Every node of a new cluster bootstraps the --cluster configuration on its first
 *    start (C-Raft refuses later ones with RAFT_CANTBOOTSTRAP, ignored), so all agree
 *    on entry 1; the bootstrap comes after every address and port was checked, so a
 *    start that failed wrote nothing.  A node added later starts with --join and
 *    bootstraps nothing: the leader sends it the log once it is promoted.  A later
 *    start whose --cluster differs from the configuration Raft loaded is refused,
 *    naming both (membership changes go through Raft), and so is a directory holding
 *    the other storage's node (it would forget its term and vote).
 *  - An empty directory never takes the id of a voter that has taken part: before
 *    it bootstraps or joins, the node asks the members it was given (fresh_check).  A
 *    voter restarted empty forgot its vote and log; with one other node behind, a
 *    write the cluster acknowledged could be lost.  The leader records each voter once
 *    it has taken part as a SEEN entry, so every node's FSM (and snapshot) holds the
 *    set; a voter wiped before its first acknowledged append is not detected.
 * Exit status: 0 after SIGTERM/SIGINT, 1 failure (port in use, storage, a --cluster
 * that is not the stored one), 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "delog_raft.h"

#define MAX_NODES 9
#define MAX_LINE (1u << 20)

/* Long-only options (getopt_long values past every letter). */
enum {
	OPT_ID = 256,
	OPT_CLUSTER,
	OPT_STORAGE,
	OPT_SNAP_EVERY,
	OPT_TRAILING,
	OPT_ENTRIES_ONLY,
	OPT_ELECTION,
	OPT_HEARTBEAT,
	OPT_JOIN,
};

static const char *prog = "delog-raft-kv";

/* ---- the map ---- */

struct kvent {
	struct kvent *next;
	uint32_t klen, vlen;
	char *key, *val;
};

struct kvmap {
	struct kvent **b;
	size_t nb, n;
};

static uint64_t hash(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;

	if (!h)
		h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

static void map_clear(struct kvmap *m)
{
	for (size_t i = 0; i < m->nb; i++) {
		struct kvent *e = m->b[i], *nx;

		for (; e; e = nx) {
			nx = e->next;
			free(e->key);
			free(e);
		}
	}
	free(m->b);
	memset(m, 0, sizeof(*m));
}

static struct kvent *map_get(const struct kvmap *m, const char *k, uint32_t kl)
{
	if (!m->nb)
		return NULL;
	for (struct kvent *e = m->b[hash(k, kl, 0) % m->nb]; e; e = e->next)
		if (e->klen == kl && memcmp(e->key, k, kl) == 0)
			return e;
	return NULL;
}

static int map_set(struct kvmap *m, const char *k, uint32_t kl, const char *v, uint32_t vl)
{
	struct kvent *e = map_get(m, k, kl);
	char *kv = malloc((size_t)kl + vl + 2);

	if (!kv)
		return -1;
	memcpy(kv, k, kl);
	kv[kl] = '\0';
	memcpy(kv + kl + 1, v, vl);
	kv[kl + 1 + vl] = '\0';
	if (e) {
		free(e->key);
	} else {
		if (m->n >= m->nb) {
			size_t nb = m->nb ? m->nb * 2 : 1024;
			struct kvent **b = calloc(nb, sizeof(*b));

			if (!b) {
				free(kv);
				return -1;
			}
			for (size_t i = 0; i < m->nb; i++) {
				struct kvent *x = m->b[i], *nx;

				for (; x; x = nx) {
					size_t h = hash(x->key, x->klen, 0) % nb;

					nx = x->next;
					x->next = b[h];
					b[h] = x;
				}
			}
			free(m->b);
			m->b = b;
			m->nb = nb;
		}
		e = calloc(1, sizeof(*e));
		if (!e) {
			free(kv);
			return -1;
		}
		e->next = m->b[hash(k, kl, 0) % m->nb];
		m->b[hash(k, kl, 0) % m->nb] = e;
		m->n++;
	}
	e->key = kv;
	e->klen = kl;
	e->val = kv + kl + 1;
	e->vlen = vl;
	return 0;
}

/* Order-independent digest of the map: the sum of each pair's hash. */
static uint64_t map_digest(const struct kvmap *m)
{
	uint64_t d = 0;

	for (size_t i = 0; i < m->nb; i++)
		for (struct kvent *e = m->b[i]; e; e = e->next)
			d += hash(e->val, e->vlen, hash(e->key, (size_t)e->klen + 1, 0));
	return d;
}

/* ---- the node ---- */

static bool valid_addr(const char *a);

struct node_cfg {
	raft_id id;
	char addr[64];
};

static struct {
	uv_loop_t *loop;
	struct raft raft;
	struct raft_io io;
	struct raft_uv_transport transport;
	struct raft_fsm fsm;
	struct kvmap map;
	uv_tcp_t server;
	uv_signal_t sigterm, sigint;
	uv_timer_t watchdog;
	struct node_cfg nodes[MAX_NODES]; /* --cluster, or --join's members (id 0) */
	unsigned nnodes;
	bool joining;  /* --join: a node added to a running cluster */
	raft_id *seen; /* voters seen taking part (replicated: SEEN entries) */
	unsigned nseen;
	bool seen_pending; /* a SEEN entry proposed, not yet applied or failed */
	raft_id id;
	const char *address;
	int client_offset;
	bool use_delog, raft_closed, closing, verbose;
	int exit_code;
	unsigned every;      /* --snapshot-every */
	bool entries_only;   /* --snapshot-entries-only */
	raft_term lead_term; /* the term whose leadership barrier was issued */
} K;

/* ---- FSM: entries are "klen(4) vlen(4) key value", or a SEEN entry ---- */

/* A SEEN entry's klen: no client key is 4 GiB long.  Its value is the voter's id. */
#define SEEN_KLEN UINT32_MAX

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint64_t get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static bool seen_has(raft_id id)
{
	for (unsigned i = 0; i < K.nseen; i++)
		if (K.seen[i] == id)
			return true;
	return false;
}

static int seen_add(raft_id id)
{
	raft_id *n;

	if (seen_has(id))
		return 0;
	n = realloc(K.seen, (K.nseen + 1) * sizeof(*n));
	if (!n)
		return -1;
	K.seen = n;
	K.seen[K.nseen++] = id;
	return 0;
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	const unsigned char *p = buf->base;
	uint32_t kl, vl;

	(void)fsm;
	*result = NULL;
	if (buf->len < 8)
		return RAFT_MALFORMED;
	kl = get32(p);
	vl = get32(p + 4);
	if (kl == SEEN_KLEN) {
		if (vl != 8 || buf->len < 16)
			return RAFT_MALFORMED;
		return seen_add(get64(p + 8)) ? RAFT_NOMEM : 0;
	}
	if ((uint64_t)kl + vl + 8 > buf->len)
		return RAFT_MALFORMED;
	/* Snapshot by bytes as well as by entries: large values must not fill the log. */
	if (K.use_delog && !K.entries_only)
		raft_set_snapshot_threshold(&K.raft, delog_raft_snapshot_threshold(&K.io, K.every));
	return map_set(&K.map, (const char *)p + 8, kl, (const char *)p + 8 + kl, vl) ? RAFT_NOMEM :
											0;
}

/* A snapshot: "count(4) nseen(4)", count pairs "klen(4) vlen(4) key value", then nseen
 * ids of 8 bytes (a snapshot written before SEEN existed has nseen 0). */
static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	size_t len = 8 + 8 * (size_t)K.nseen;
	unsigned char *p;

	(void)fsm;
	for (size_t i = 0; i < K.map.nb; i++)
		for (struct kvent *e = K.map.b[i]; e; e = e->next)
			len += 8 + (size_t)e->klen + e->vlen;
	*bufs = raft_malloc(sizeof(**bufs));
	if (!*bufs)
		return RAFT_NOMEM;
	p = raft_malloc(len);
	if (!p) {
		raft_free(*bufs);
		return RAFT_NOMEM;
	}
	(*bufs)[0].base = p;
	(*bufs)[0].len = len;
	*n = 1;
	put32(p, (uint32_t)K.map.n);
	put32(p + 4, K.nseen);
	p += 8;
	for (size_t i = 0; i < K.map.nb; i++)
		for (struct kvent *e = K.map.b[i]; e; e = e->next) {
			put32(p, e->klen);
			put32(p + 4, e->vlen);
			memcpy(p + 8, e->key, e->klen);
			memcpy(p + 8 + e->klen, e->val, e->vlen);
			p += 8 + (size_t)e->klen + e->vlen;
		}
	for (unsigned i = 0; i < K.nseen; i++, p += 8)
		put64(p, K.seen[i]);
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	const unsigned char *p = buf->base, *end = p + buf->len;
	uint32_t n, nseen;

	(void)fsm;
	if (buf->len < 8)
		return RAFT_MALFORMED;
	n = get32(p);
	nseen = get32(p + 4);
	p += 8;
	map_clear(&K.map);
	K.nseen = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t kl, vl;

		if (end - p < 8)
			return RAFT_MALFORMED;
		kl = get32(p);
		vl = get32(p + 4);
		if ((uint64_t)(end - p) - 8 < (uint64_t)kl + vl)
			return RAFT_MALFORMED;
		if (map_set(&K.map, (const char *)p + 8, kl, (const char *)p + 8 + kl, vl))
			return RAFT_NOMEM;
		p += 8 + (size_t)kl + vl;
	}
	if ((uint64_t)(end - p) < 8 * (uint64_t)nseen)
		return RAFT_MALFORMED;
	for (uint32_t i = 0; i < nseen; i++, p += 8)
		if (seen_add(get64(p)))
			return RAFT_NOMEM;
	raft_free(buf->base); /* the FSM owns a restored snapshot's buffer */
	return 0;
}

/* ---- client connections ---- */

struct slot {
	struct slot *next;
	bool done;
	char *text;
	size_t len;
};

struct conn {
	uv_tcp_t h;
	char *buf;
	size_t len, cap;
	struct slot *head, *tail;
	unsigned refs;
	bool closed;
};

struct wreq {
	uv_write_t w;
	char *text;
};

static void conn_free_maybe(struct conn *c)
{
	if (!c->closed || c->refs)
		return;
	while (c->head) {
		struct slot *s = c->head;

		c->head = s->next;
		free(s->text);
		free(s);
	}
	free(c->buf);
	free(c);
}

static void write_done(uv_write_t *w, int status)
{
	struct wreq *r = (struct wreq *)w;

	(void)status;
	free(r->text);
	free(r);
}

static void conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;

	c->refs--;
	conn_free_maybe(c);
}

static void conn_close(struct conn *c)
{
	if (c->closed)
		return;
	c->closed = true;
	c->refs++;
	uv_close((uv_handle_t *)&c->h, conn_closed);
}

/* Write out every filled slot at the head of the queue. */
static void conn_flush(struct conn *c)
{
	while (c->head && c->head->done) {
		struct slot *s = c->head;

		c->head = s->next;
		if (!c->head)
			c->tail = NULL;
		if (!c->closed) {
			struct wreq *r = malloc(sizeof(*r));
			uv_buf_t b = uv_buf_init(s->text, (unsigned)s->len);

			if (r) {
				r->text = s->text;
				s->text = NULL;
				if (uv_write(&r->w, (uv_stream_t *)&c->h, &b, 1, write_done)) {
					free(r->text);
					free(r);
					conn_close(c);
				}
			}
		}
		free(s->text);
		free(s);
	}
}

static struct slot *slot_new(struct conn *c)
{
	struct slot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (c->tail)
		c->tail->next = s;
	else
		c->head = s;
	c->tail = s;
	return s;
}

static void slot_fill(struct conn *c, struct slot *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void slot_fill(struct conn *c, struct slot *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s->text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		s->text = NULL;
		n = 0;
	}
	s->len = (size_t)n;
	s->done = true;
	conn_flush(c);
}

/* The leader's client address ("ERR not-leader ID HOST:PORT") or "ERR no-leader". */
static void not_leader(struct conn *c, struct slot *s)
{
	raft_id lid;
	const char *laddr;
	char host[64];
	int port;

	raft_leader(&K.raft, &lid, &laddr);
	if (!lid || !laddr || sscanf(laddr, "%63[^:]:%d", host, &port) != 2) {
		slot_fill(c, s, "ERR no-leader\n");
		return;
	}
	slot_fill(c, s, "ERR not-leader %llu %s:%d\n", (unsigned long long)lid, host,
		  port + K.client_offset);
}

struct req {
	union {
		struct raft_apply apply;
		struct raft_barrier barrier;
		struct raft_change change;
	} u;
	struct conn *c;
	struct slot *s;
	char *key;
	uint32_t klen;
};

static void req_end(struct req *r)
{
	struct conn *c = r->c;

	free(r->key);
	free(r);
	c->refs--;
	conn_free_maybe(c);
}

static void apply_cb(struct raft_apply *a, int status, void *result)
{
	struct req *r = a->data;

	(void)result;
	if (status == 0)
		slot_fill(r->c, r->s, "OK\n");
	else
		slot_fill(r->c, r->s, "ERR %s\n", raft_strerror(status));
	req_end(r);
}

static void barrier_cb(struct raft_barrier *b, int status)
{
	struct req *r = b->data;
	struct kvent *e;

	if (status) {
		slot_fill(r->c, r->s, "ERR %s\n", raft_strerror(status));
	} else if ((e = map_get(&K.map, r->key, r->klen)) != NULL) {
		slot_fill(r->c, r->s, "VALUE %.*s\n", (int)e->vlen, e->val);
	} else {
		slot_fill(r->c, r->s, "NOTFOUND\n");
	}
	req_end(r);
}

static void change_cb(struct raft_change *ch, int status)
{
	struct req *r = ch->data;

	if (status == 0)
		slot_fill(r->c, r->s, "OK\n");
	else
		slot_fill(r->c, r->s, "ERR %s\n", raft_strerror(status));
	req_end(r);
}

static const char *role_name(int role)
{
	return role == RAFT_VOTER ? "voter" : role == RAFT_STANDBY ? "standby" : "spare";
}

/* "MEMBERS ID=HOST:PORT/ROLE[/seen] ..." of this node's configuration, the last one it
 * holds (committed or not); "seen": a voter the cluster has seen taking part. */
static void members_reply(struct conn *c, struct slot *s)
{
	const struct raft_configuration *cf = &K.raft.configuration;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f) {
		slot_fill(c, s, "ERR out of memory\n");
		return;
	}
	fputs("MEMBERS", f);
	for (unsigned i = 0; i < cf->n; i++)
		fprintf(f, " %llu=%s/%s%s", (unsigned long long)cf->servers[i].id,
			cf->servers[i].address, role_name(cf->servers[i].role),
			seen_has(cf->servers[i].id) ? "/seen" : "");
	fputc('\n', f);
	if (fclose(f) == 0)
		slot_fill(c, s, "%s", out);
	else
		slot_fill(c, s, "ERR out of memory\n");
	free(out);
}

/* ADD ID HOST:PORT, PROMOTE ID [voter|standby|spare], REMOVE ID: C-Raft's membership
 * calls on the leader; OK once the new configuration is committed.  Parsed here:
 * 0, or -1 with the usage written to @s. */
static int change_parse(struct conn *c, struct slot *s, const char *line, char *verb, raft_id *id,
			char *addr, int *role)
{
	char rest[80] = "";
	unsigned long long v;
	int n = 0;

	*role = RAFT_VOTER;
	if (sscanf(line, "%7s %llu%n", verb, &v, &n) != 2 || v == 0)
		goto usage;
	*id = v;
	snprintf(rest, sizeof(rest), "%s", line[n] == ' ' ? line + n + 1 : line + n);
	if (strcmp(verb, "ADD") == 0) {
		if (!valid_addr(rest))
			goto usage;
		snprintf(addr, 64, "%s", rest);
	} else if (strcmp(verb, "PROMOTE") == 0) {
		if (!*rest || strcmp(rest, "voter") == 0)
			*role = RAFT_VOTER;
		else if (strcmp(rest, "standby") == 0)
			*role = RAFT_STANDBY;
		else if (strcmp(rest, "spare") == 0)
			*role = RAFT_SPARE;
		else
			goto usage;
	} else if (*rest) {
		goto usage;
	}
	return 0;
usage:
	slot_fill(c, s,
		  "ERR usage: ADD ID IPV4:PORT, PROMOTE ID [voter|standby|spare], REMOVE ID\n");
	return -1;
}

static void change_request(struct conn *c, struct slot *s, const char *line)
{
	char verb[8], addr[64];
	raft_id id;
	int role, rv;
	struct req *r;

	if (change_parse(c, s, line, verb, &id, addr, &role))
		return;
	if (raft_state(&K.raft) != RAFT_LEADER) {
		not_leader(c, s);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		slot_fill(c, s, "ERR out of memory\n");
		return;
	}
	r->c = c;
	r->s = s;
	r->u.change.data = r;
	rv = verb[0] == 'A' ? raft_add(&K.raft, &r->u.change, id, addr, change_cb) :
	     verb[0] == 'P' ? raft_assign(&K.raft, &r->u.change, id, role, change_cb) :
			      raft_remove(&K.raft, &r->u.change, id, change_cb);
	if (rv) {
		free(r);
		if (rv == RAFT_NOTLEADER)
			not_leader(c, s);
		else
			slot_fill(c, s, "ERR %s\n", raft_strerror(rv));
		return;
	}
	c->refs++;
}

static const char *state_name(int st)
{
	switch (st) {
	case RAFT_FOLLOWER:
		return "follower";
	case RAFT_CANDIDATE:
		return "candidate";
	case RAFT_LEADER:
		return "leader";
	default:
		return "unavailable";
	}
}

static void handle_line(struct conn *c, char *line, size_t len)
{
	struct slot *s = slot_new(c);
	char *sp, *key, *val;
	struct req *r;
	int rv;

	if (!s) {
		conn_close(c);
		return;
	}
	if (len && line[len - 1] == '\r')
		line[--len] = '\0';
	if (strcmp(line, "DIGEST") == 0) {
		slot_fill(c, s, "DIGEST %zu %016llx %llu\n", K.map.n,
			  (unsigned long long)map_digest(&K.map),
			  (unsigned long long)raft_last_applied(&K.raft));
		return;
	}
	if (strcmp(line, "STATUS") == 0) {
		raft_id lid;
		const char *laddr;

		raft_leader(&K.raft, &lid, &laddr);
		slot_fill(c, s,
			  "STATUS id=%llu state=%s leader=%llu last=%llu commit=%llu "
			  "applied=%llu\n",
			  (unsigned long long)K.id, state_name(raft_state(&K.raft)),
			  (unsigned long long)lid, (unsigned long long)raft_last_index(&K.raft),
			  (unsigned long long)K.raft.commit_index,
			  (unsigned long long)raft_last_applied(&K.raft));
		return;
	}
	if (strcmp(line, "MEMBERS") == 0) {
		members_reply(c, s);
		return;
	}
	if (strncmp(line, "ADD ", 4) == 0 || strncmp(line, "PROMOTE ", 8) == 0 ||
	    strncmp(line, "REMOVE ", 7) == 0) {
		change_request(c, s, line);
		return;
	}
	if (strncmp(line, "SET ", 4) != 0 && strncmp(line, "GET ", 4) != 0) {
		slot_fill(c, s,
			  "ERR unknown request (SET KEY VALUE, GET KEY, DIGEST, STATUS, MEMBERS, "
			  "ADD, PROMOTE, REMOVE)\n");
		return;
	}
	key = line + 4;
	sp = strchr(key, ' ');
	if (line[0] == 'G' ? sp != NULL || !*key : sp == NULL || sp == key) {
		slot_fill(c, s, "ERR usage: %s\n", line[0] == 'G' ? "GET KEY" : "SET KEY VALUE");
		return;
	}
	if (raft_state(&K.raft) != RAFT_LEADER) {
		not_leader(c, s);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		slot_fill(c, s, "ERR out of memory\n");
		return;
	}
	r->c = c;
	r->s = s;
	if (line[0] == 'S' && K.use_delog &&
	    !delog_raft_admit(&K.io, ((8 + (size_t)len) + 7) & ~(size_t)7)) {
		/* the log is full until a snapshot releases space: say so, queue nothing */
		free(r);
		slot_fill(c, s, "ERR log-full (a snapshot will free space: retry)\n");
		return;
	}
	if (line[0] == 'S') {
		uint32_t kl = (uint32_t)(sp - key), vl;
		struct raft_buffer b;

		val = sp + 1;
		vl = (uint32_t)(len - (size_t)(val - line));
		/* C-Raft 0.15's TCP transport sends an entry's len bytes but its receiver
		 * skips to the next multiple of 8: entry sizes must be multiples of 8 */
		b.len = (8 + (size_t)kl + vl + 7) & ~(size_t)7;
		b.base = raft_calloc(1, b.len);
		if (!b.base) {
			free(r);
			slot_fill(c, s, "ERR out of memory\n");
			return;
		}
		put32(b.base, kl);
		put32((unsigned char *)b.base + 4, vl);
		memcpy((char *)b.base + 8, key, kl);
		memcpy((char *)b.base + 8 + kl, val, vl);
		r->u.apply.data = r;
		rv = raft_apply(&K.raft, &r->u.apply, &b, 1, apply_cb);
		if (rv)
			raft_free(b.base);
	} else {
		r->klen = (uint32_t)strlen(key);
		r->key = strdup(key);
		r->u.barrier.data = r;
		rv = r->key ? raft_barrier(&K.raft, &r->u.barrier, barrier_cb) : RAFT_NOMEM;
	}
	if (rv) {
		free(r->key);
		free(r);
		if (rv == RAFT_NOTLEADER)
			not_leader(c, s);
		else
			slot_fill(c, s, "ERR %s\n", raft_strerror(rv));
		return;
	}
	c->refs++;
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *c = h->data;

	(void)hint;
	if (c->cap - c->len < 65536) {
		size_t cap = c->cap ? c->cap * 2 : 131072;
		char *nb = realloc(c->buf, cap);

		if (!nb) {
			*buf = uv_buf_init(NULL, 0);
			return;
		}
		c->buf = nb;
		c->cap = cap;
	}
	*buf = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = st->data;
	size_t start = 0;

	(void)buf;
	if (n < 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)n;
	for (size_t i = c->len - (size_t)n; i < c->len; i++) {
		if (c->buf[i] != '\n')
			continue;
		c->buf[i] = '\0';
		handle_line(c, c->buf + start, i - start);
		start = i + 1;
		if (c->closed)
			return;
	}
	memmove(c->buf, c->buf + start, c->len - start);
	c->len -= start;
	if (c->len > MAX_LINE) {
		struct slot *s = slot_new(c);

		if (s)
			slot_fill(c, s, "ERR line too long\n");
		conn_close(c);
	}
}

static void accept_cb(uv_stream_t *srv, int status)
{
	struct conn *c;

	if (status || K.closing)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	uv_tcp_init(K.loop, &c->h);
	c->h.data = c;
	if (uv_accept(srv, (uv_stream_t *)&c->h) ||
	    uv_read_start((uv_stream_t *)&c->h, alloc_cb, read_cb)) {
		conn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->h, 1);
}

/* ---- lifecycle ---- */

/* After the Raft io closed, the only handles with data left are client connections. */
static void walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (uv_is_closing(h))
		return;
	if (h->type == UV_TCP && h->data)
		conn_close(h->data);
	else
		uv_close(h, NULL);
}

static void raft_closed(struct raft *r)
{
	(void)r;
	K.raft_closed = true;
	/* the io is closed: close every remaining handle (client connections included) */
	uv_walk(K.loop, walk_close, NULL);
}

static void shutdown_node(int code)
{
	if (K.closing)
		return;
	K.closing = true;
	K.exit_code = code;
	uv_close((uv_handle_t *)&K.server, NULL);
	raft_close(&K.raft, raft_closed);
}

/* C-Raft stops (RAFT_UNAVAILABLE) after an error it cannot go on from, such as a
 * failed disk write: say why and exit 1, so a supervisor restarts the node (a restart
 * recovers from the log). */
static void lead_barrier_cb(struct raft_barrier *b, int status)
{
	(void)status;
	free(b);
}

static void seen_cb(struct raft_apply *a, int status, void *result)
{
	(void)status;
	(void)result;
	K.seen_pending = false;
	free(a);
}

/* The leader records, once, each voter that has taken part: itself, and a follower
 * that acknowledged an append.  An empty directory claiming a seen voter's id is then
 * refused (fresh_check): restarted empty, it would have forgotten its vote and log. */
static void seen_propose(void)
{
	const struct raft_configuration *cf = &K.raft.configuration;
	struct raft_apply *a;
	struct raft_buffer b;
	raft_id id = 0;

	if (K.seen_pending || raft_state(&K.raft) != RAFT_LEADER)
		return;
	for (unsigned i = 0; i < cf->n && !id; i++)
		if (cf->servers[i].role == RAFT_VOTER && !seen_has(cf->servers[i].id) &&
		    (cf->servers[i].id == K.id || K.raft.leader_state.progress[i].match_index > 0))
			id = cf->servers[i].id;
	if (!id || !(a = calloc(1, sizeof(*a))))
		return;
	b.len = 16;
	b.base = raft_calloc(1, b.len);
	if (!b.base) {
		free(a);
		return;
	}
	put32(b.base, SEEN_KLEN);
	put32((unsigned char *)b.base + 4, 8);
	put64((unsigned char *)b.base + 8, id);
	if (raft_apply(&K.raft, a, &b, 1, seen_cb)) {
		raft_free(b.base);
		free(a);
		return;
	}
	K.seen_pending = true;
}

static void watchdog_cb(uv_timer_t *t)
{
	(void)t;
	if (!K.closing && raft_state(&K.raft) == RAFT_UNAVAILABLE) {
		fprintf(stderr, "%s: node %llu: Raft stopped: %s\n", prog, (unsigned long long)K.id,
			raft_errmsg(&K.raft)[0] ? raft_errmsg(&K.raft) : "(no message)");
		shutdown_node(1);
		return;
	}
	/* A new leader commits a barrier of its own term at once (C-Raft 0.15 does not):
	 * the entries of earlier terms are then applied, and snapshotted, without waiting
	 * for a client; on a full log it takes the reserve (delog_raft_admit). */
	if (!K.closing && raft_state(&K.raft) == RAFT_LEADER &&
	    K.lead_term != K.raft.current_term) {
		struct raft_barrier *b = calloc(1, sizeof(*b));

		if (b && raft_barrier(&K.raft, b, lead_barrier_cb) == 0)
			K.lead_term = K.raft.current_term;
		else
			free(b);
	}
	if (!K.closing)
		seen_propose();
}

static void on_signal(uv_signal_t *s, int signum)
{
	(void)s;
	if (K.verbose)
		fprintf(stderr, "%s: node %llu: signal %d, shutting down\n", prog,
			(unsigned long long)K.id, signum);
	shutdown_node(0);
}

/* ---- arguments ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s --id N --cluster ID=HOST:PORT,... --dir DIR [--address HOST:PORT]\n"
		"       %s --id N --address HOST:PORT --join HOST:PORT,... --dir DIR\n"
		"       %s --id N --address HOST:PORT --dir DIR\n"
		"                     [--storage delog|uv] [--policy POLICY] [--size N]\n"
		"                     [--snapshot-every N] [--snapshot-entries-only] [--trailing N]\n"
		"                     [--client-offset N]\n"
		"                     [--election-timeout MS] [--heartbeat MS] [--verbose]\n",
		prog, prog, prog);
}

static void help(void)
{
	usage(stdout);
	printf("\nA replicated key-value store: one process per node of a C-Raft cluster, its Raft\n"
	       "log kept by delog (libdelog-raft).  Clients send lines to the node's client\n"
	       "port: SET KEY VALUE (OK once committed and applied), GET KEY (VALUE V or\n"
	       "NOTFOUND, linearizable), DIGEST, STATUS, MEMBERS, and the membership changes\n"
	       "ADD ID HOST:PORT, PROMOTE ID [voter|standby|spare], REMOVE ID.  A follower\n"
	       "answers SET, GET and changes with ERR not-leader ID HOST:PORT, the leader's\n"
	       "client address.\n"
	       "\noptions:\n"
	       "      --id N              this node's id (> 0)\n"
	       "      --cluster SPEC      a new cluster: every node, ID=HOST:PORT,... (the Raft\n"
	       "                          addresses), bootstrapped on the first start\n"
	       "      --join MEMBERS      a node added to a running cluster: the Raft addresses\n"
	       "                          HOST:PORT,... of members to ask on its first start\n"
	       "  -d, --dir DIR           this node's data directory (created if missing)\n"
	       "  -a, --address HOST:PORT this node's Raft address (default: its --cluster\n"
	       "                          entry; required without --cluster)\n"
	       "      --storage S         delog (default) or uv (C-Raft's own segment files)\n"
	       "  -p, --policy P          delog flush policy: sync (default), async, single\n"
	       "  -s, --size N            size of the delog log (K, M, G; default 64M); an\n"
	       "                          existing smaller log is moved to one of this size\n"
	       "      --snapshot-every N  snapshot the map every N entries (default 1024), or\n"
	       "                          sooner once a quarter of the delog log is used\n"
	       "      --snapshot-entries-only  only every N entries: large values may then\n"
	       "                          fill the log (for tests of a full log)\n"
	       "      --trailing N        entries kept behind a snapshot (default 128, >= 1;\n"
	       "                          the delog log keeps at most an eighth of its size)\n"
	       "  -o, --client-offset N   client port = Raft port + N (default 1000)\n"
	       "      --election-timeout MS  (default 1000)\n"
	       "      --heartbeat MS      (default 100)\n"
	       "  -v, --verbose           log state changes to stderr\n"
	       "  -h, --help              show this help\n"
	       "\nEvery node of a new cluster bootstraps the --cluster configuration on its\n"
	       "first start, so all must be given the same --cluster; a later start with\n"
	       "another one is refused (exit 1).  A node added later starts empty with --join,\n"
	       "then delog-raft-kvclient add and promote make it a voter; after a membership\n"
	       "change nodes restart with --address instead of --cluster.  An empty directory\n"
	       "claiming the id of a voter the cluster has seen taking part is refused (exit\n"
	       "1; replace the node instead).  RAFT.md gives the procedures.\n"
	       "Exit status: 0 after SIGTERM or SIGINT, 1 failure, 2 usage error.\n");
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	return 2;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end)
		return false;
	*out = v;
	return true;
}

/* HOST:PORT with HOST a dotted IPv4 address (C-Raft's TCP transport takes no names). */
static bool valid_addr(const char *a)
{
	char host[64];
	struct in_addr in;
	int port, n = 0;

	return strlen(a) < 64 && sscanf(a, "%63[^:]:%d%n", host, &port, &n) == 2 && a[n] == '\0' &&
	       inet_pton(AF_INET, host, &in) == 1 && port > 0 && port < 65536 - K.client_offset;
}

/* "1=127.0.0.1:9001,2=...": ids > 0 and distinct, addresses HOST:PORT and distinct. */
static int parse_cluster(const char *spec, char *err, size_t errlen)
{
	char *copy = strdup(spec), *save = NULL, *tok;

	if (!copy)
		return -1;
	K.nnodes = 0;
	if (spec[0] == ',' || (*spec && spec[strlen(spec) - 1] == ',') || strstr(spec, ",,")) {
		snprintf(err, errlen, "an empty entry (',,' or a ',' at an end)");
		goto bad;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		uint64_t id;

		if (K.nnodes == MAX_NODES) {
			snprintf(err, errlen, "more than %d nodes", MAX_NODES);
			goto bad;
		}
		if (!eq) {
			snprintf(err, errlen, "'%.40s' is not ID=HOST:PORT", tok);
			goto bad;
		}
		*eq = '\0';
		if (!parse_u64(tok, &id) || id == 0 || strspn(tok, "0123456789") != strlen(tok)) {
			snprintf(err, errlen, "'%.40s' is not a node id (a number > 0)", tok);
			goto bad;
		}
		if (!valid_addr(eq + 1)) {
			snprintf(err, errlen,
				 "node %llu: '%.40s' is not IPV4:PORT (a dotted address, port 1-%d)",
				 (unsigned long long)id, eq + 1, 65535 - K.client_offset);
			goto bad;
		}
		for (unsigned i = 0; i < K.nnodes; i++) {
			if (K.nodes[i].id == id) {
				snprintf(err, errlen, "node %llu is listed twice",
					 (unsigned long long)id);
				goto bad;
			}
			if (strcmp(K.nodes[i].addr, eq + 1) == 0) {
				snprintf(err, errlen, "address %.40s is listed twice", eq + 1);
				goto bad;
			}
		}
		K.nodes[K.nnodes].id = id;
		snprintf(K.nodes[K.nnodes].addr, sizeof(K.nodes[0].addr), "%s", eq + 1);
		K.nnodes++;
	}
	if (!K.nnodes) {
		snprintf(err, errlen, "no nodes");
		goto bad;
	}
	free(copy);
	return 0;
bad:
	free(copy);
	return -1;
}

/* mkdir -p: every missing level of @path. */
static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(buf, 0700) != 0 && errno != EEXIST ? -errno : 0;
}

/* The file in @dir that says a node of --storage delog (@of_delog) or uv is kept there,
 * or NULL. */
static const char *storage_file(const char *dir, bool of_delog)
{
	static const char *const uv_files[] = { "metadata1", "metadata2" };
	static const char *const delog_files[] = { "delog.log" };
	const char *const *f = of_delog ? delog_files : uv_files;
	size_t n = of_delog ? 1 : 2;
	char path[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, f[i]);
		if (access(path, F_OK) == 0)
			return f[i];
	}
	return NULL;
}

/* "1=A,2=B" of a configuration, into @out. */
static void conf_str(const struct raft_configuration *c, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < c->n && o < len; i++)
		o += (size_t)snprintf(out + o, len - o, "%s%llu=%s", i ? "," : "",
				      (unsigned long long)c->servers[i].id, c->servers[i].address);
}

/* Does the configuration Raft loaded say what --cluster says (the same ids, each at the
 * same address)? */
static bool conf_matches(const struct raft_configuration *c)
{
	if (c->n != K.nnodes)
		return false;
	for (unsigned i = 0; i < K.nnodes; i++) {
		unsigned j = 0;

		while (j < c->n && c->servers[j].id != K.nodes[i].id)
			j++;
		if (j == c->n || strcmp(c->servers[j].address, K.nodes[i].addr) != 0)
			return false;
	}
	return true;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* --join's "HOST:PORT,...": the Raft addresses of members to ask (ids 0). */
static int parse_join(const char *spec, char *err, size_t errlen)
{
	char *copy = strdup(spec), *save = NULL, *tok;

	if (!copy)
		return -1;
	K.nnodes = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (K.nnodes == MAX_NODES)
			snprintf(err, errlen, "more than %d members", MAX_NODES);
		else if (!valid_addr(tok))
			snprintf(err, errlen, "'%.40s' is not IPV4:PORT", tok);
		else
			err[0] = '\0';
		if (err[0]) {
			free(copy);
			return -1;
		}
		snprintf(K.nodes[K.nnodes++].addr, sizeof(K.nodes[0].addr), "%s", tok);
	}
	free(copy);
	if (!K.nnodes) {
		snprintf(err, errlen, "no members");
		return -1;
	}
	return 0;
}

/* Why the configuration Raft loaded refuses this start, or NULL (malloc'd).  With
 * --cluster it must be --cluster: a node first started alone would otherwise serve a
 * cluster nobody asked for.  Without, it must hold this node at its --address, or be
 * empty (a node added but not yet sent the log). */
static char *stored_conf_refused(const char *dir, const char *cluster)
{
	const struct raft_configuration *c = &K.raft.configuration;
	char stored[4096], *why = NULL;
	const struct raft_server *me = NULL;

	conf_str(c, stored, sizeof(stored));
	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].id == K.id)
			me = &c->servers[i];
	if (cluster && !conf_matches(c)) {
		if (asprintf(&why,
			     "%s holds the configuration %s; --cluster says %s: a cluster's "
			     "membership changes through Raft (delog-raft-kvclient add, promote, "
			     "remove), not through --cluster; restart this node with --address "
			     "instead of --cluster",
			     dir, stored[0] ? stored : "(none)", cluster) < 0)
			why = NULL;
	} else if (!cluster && c->n && !me) {
		if (asprintf(&why,
			     "%s holds the configuration %s, without node %llu: it was removed "
			     "from the cluster (a removed node comes back as a new id, RAFT.md: "
			     "Replacing a node)",
			     dir, stored, (unsigned long long)K.id) < 0)
			why = NULL;
	} else if (!cluster && me && strcmp(me->address, K.address) != 0) {
		if (asprintf(&why,
			     "%s holds node %llu at %s, not --address %s: a node moves by being "
			     "replaced (RAFT.md: Moving a cluster)",
			     dir, (unsigned long long)K.id, me->address, K.address) < 0)
			why = NULL;
	}
	return why;
}

/* ---- asking the cluster before an empty directory takes an id ---- */

/* The client address (HOST:PORT+offset) of the member at Raft address @raft_addr. */
static const char *client_addr(const char *raft_addr, char out[80])
{
	char host[64];
	int port = 0;

	sscanf(raft_addr, "%63[^:]:%d", host, &port);
	snprintf(out, 80, "%s:%d", host, port + K.client_offset);
	return out;
}

/* One request line to a member's client port (its Raft port + the client offset) and
 * its reply line, each step within @ms: 0, or -1 (down, silent, or no whole line). */
static int peer_ask(const char *raft_addr, const char *req, char *out, size_t len, int ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct pollfd pfd;
	char host[64], *nl;
	int fd, port, e = 0, rv = -1;
	socklen_t el = sizeof(e);
	size_t o = 0;

	if (sscanf(raft_addr, "%63[^:]:%d", host, &port) != 2 ||
	    inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	sa.sin_port = htons((uint16_t)(port + K.client_offset));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if ((connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) ||
	    poll(&pfd, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0 || e ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	pfd.events = POLLIN;
	while (o + 1 < len) {
		ssize_t n;

		if (poll(&pfd, 1, ms) != 1 || (n = read(fd, out + o, len - 1 - o)) <= 0)
			goto out;
		o += (size_t)n;
		out[o] = '\0';
		if ((nl = strchr(out, '\n')) != NULL) {
			*nl = '\0';
			rv = 0;
			break;
		}
	}
out:
	close(fd);
	return rv;
}

/* A MEMBERS reply into @c, and which of its servers are seen voters: 0, or -1 if it is
 * not one. */
static int members_parse(char *line, struct raft_configuration *c, bool *seen, unsigned max)
{
	char *save = NULL, *tok;

	if (strncmp(line, "MEMBERS", 7) != 0 || (line[7] && line[7] != ' '))
		return -1;
	for (tok = strtok_r(line + 7, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char addr[64], role[16], flag[8] = "";
		unsigned long long id;
		int r;

		if (c->n == max ||
		    sscanf(tok, "%llu=%63[^/]/%15[^/]/%7s", &id, addr, role, flag) < 3)
			return -1;
		r = strcmp(role, "voter") == 0   ? RAFT_VOTER :
		    strcmp(role, "standby") == 0 ? RAFT_STANDBY :
						   RAFT_SPARE;
		seen[c->n] = strcmp(flag, "seen") == 0;
		if (raft_configuration_add(c, id, addr, r))
			return -1;
	}
	return 0;
}

/* An empty directory is about to bootstrap (--cluster) or join (--join) as node K.id:
 * ask the members what the cluster holds first, and refuse (exit 1, the safe way in the
 * message) when the id is a voter that has taken part (with --join: any voter), when
 * the cluster has another address for it, or when it has moved on from --cluster.  A
 * voter restarted empty forgot its vote and its log: with one other node behind, a
 * write the cluster acknowledged could be lost.  A --cluster whose members do not
 * answer is a new cluster's first start; a --join no member answers is refused. */
static int fresh_check(const char *dir, const char *cluster)
{
	char reply[8192], have[4096], ca[80];
	bool seen[64];
	unsigned answered = 0;

	for (unsigned i = 0; i < K.nnodes; i++) {
		struct raft_configuration c;
		const struct raft_server *me = NULL;
		int rv = 0;

		if (K.nodes[i].id == K.id ||
		    peer_ask(K.nodes[i].addr, "MEMBERS\n", reply, sizeof(reply), 1000))
			continue;
		raft_configuration_init(&c);
		if (members_parse(reply, &c, seen, 64) || c.n == 0) {
			raft_configuration_close(&c); /* not a member, or one that holds nothing */
			continue;
		}
		answered++;
		conf_str(&c, have, sizeof(have));
		for (unsigned j = 0; j < c.n; j++)
			if (c.servers[j].id == K.id)
				me = &c.servers[j];
		if (me && me->role == RAFT_VOTER && (K.joining || seen[me - c.servers]))
			rv = fail("node %llu: %s is empty, but the cluster (the member at %s) has "
				  "node %llu as a voter that has taken part: started empty it would "
				  "have forgotten its vote and its log, and a write the cluster "
				  "acknowledged could be lost.  Replace it: delog-raft-kvclient "
				  "remove %s %llu; then start a new id in an empty directory "
				  "(delog-raft-kv --id NEW --address HOST:PORT --join %s --dir DIR), "
				  "delog-raft-kvclient add %s NEW HOST:PORT and "
				  "delog-raft-kvclient promote %s NEW (RAFT.md: Replacing a node)",
				  (unsigned long long)K.id, dir, K.nodes[i].addr,
				  (unsigned long long)K.id, client_addr(K.nodes[i].addr, ca),
				  (unsigned long long)K.id, K.nodes[i].addr, ca, ca);
		else if (me && strcmp(me->address, K.address) != 0)
			rv = fail("node %llu: the cluster (the member at %s) has node %llu at %s, "
				  "not %s: a node moves by being replaced (RAFT.md: Moving a "
				  "cluster)",
				  (unsigned long long)K.id, K.nodes[i].addr,
				  (unsigned long long)K.id, me->address, K.address);
		else if (!K.joining && !conf_matches(&c))
			rv = fail("node %llu: the cluster (the member at %s) holds the "
				  "configuration %s; --cluster says %s: it has changed since, and "
				  "a node added to it starts with --join (RAFT.md: Changing the "
				  "membership)",
				  (unsigned long long)K.id, K.nodes[i].addr, have, cluster);
		raft_configuration_close(&c);
		if (rv)
			return rv;
	}
	if (K.joining && !answered)
		return fail("node %llu: no member in --join answered on its client port (Raft "
			    "port + %d): a node joins a running cluster, whose members must say "
			    "that id %llu is not a voter already",
			    (unsigned long long)K.id, K.client_offset, (unsigned long long)K.id);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		/* The letters mean what they mean to `delog` (-p policy, -s size, -d, -a,
		 * -o, -v, -h); an option delog has a letter for with another meaning, or
		 * none, is long only. */
		{ "id", required_argument, NULL, OPT_ID },
		{ "cluster", required_argument, NULL, OPT_CLUSTER },
		{ "dir", required_argument, NULL, 'd' },
		{ "address", required_argument, NULL, 'a' },
		{ "storage", required_argument, NULL, OPT_STORAGE },
		{ "policy", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "snapshot-every", required_argument, NULL, OPT_SNAP_EVERY },
		{ "trailing", required_argument, NULL, OPT_TRAILING },
		{ "snapshot-entries-only", no_argument, NULL, OPT_ENTRIES_ONLY },
		{ "client-offset", required_argument, NULL, 'o' },
		{ "election-timeout", required_argument, NULL, OPT_ELECTION },
		{ "heartbeat", required_argument, NULL, OPT_HEARTBEAT },
		{ "join", required_argument, NULL, OPT_JOIN },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct delog_raft_options dopts = { .size = sizeof(dopts) };
	const char *cluster = NULL, *join = NULL, *dir = NULL, *storage = "delog";
	uint64_t id = 0, every = 1024, trailing = 128, offset = 1000, et = 1000, hb = 100;
	struct raft_configuration conf;
	char err[160], chost[64];
	struct sockaddr_in sa;
	bool flush_set = false, fresh;
	const char *other;
	char *why;
	int ch, rv, cport;

	K.client_offset = 1000;
	while ((ch = getopt_long(argc, argv, "d:a:p:s:o:vh", opts, NULL)) != -1) {
		switch (ch) {
		case OPT_ID:
			if (!parse_u64(optarg, &id) || id == 0)
				return bad_usage("--id: '%s' is not a node id (a number > 0)",
						 optarg);
			break;
		case OPT_CLUSTER:
			cluster = optarg;
			break;
		case OPT_JOIN:
			join = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'a':
			K.address = optarg;
			break;
		case OPT_STORAGE:
			if (strcmp(optarg, "delog") && strcmp(optarg, "uv"))
				return bad_usage("--storage: '%s' is not delog or uv", optarg);
			storage = optarg;
			break;
		case 'p':
			if (delog_flush_policy_parse(optarg, &dopts.flush) ||
			    dopts.flush == DELOG_FLUSH_NONE)
				return bad_usage("--policy: '%s' is not sync, async or single",
						 optarg);
			flush_set = true;
			break;
		case 's':
			if (!parse_u64(optarg, &dopts.log_size) || dopts.log_size < (4u << 20))
				return bad_usage("--size: '%s' is not a size of at least 4M",
						 optarg);
			break;
		case OPT_SNAP_EVERY:
			if (!parse_u64(optarg, &every) || every < 2 || every > UINT_MAX)
				return bad_usage("--snapshot-every: '%s' is not a number >= 2",
						 optarg);
			break;
		case OPT_ENTRIES_ONLY:
			K.entries_only = true;
			break;
		case OPT_TRAILING:
			/* 0 would read as an installed snapshot: every entry dropped */
			if (!parse_u64(optarg, &trailing) || trailing < 1 || trailing > UINT_MAX)
				return bad_usage("--trailing: '%s' is not a number >= 1", optarg);
			break;
		case 'o':
			if (!parse_u64(optarg, &offset) || offset == 0 || offset > 60000)
				return bad_usage("--client-offset: '%s' is not 1-60000", optarg);
			K.client_offset = (int)offset;
			break;
		case OPT_ELECTION:
			if (!parse_u64(optarg, &et) || et < 10 || et > 600000)
				return bad_usage("--election-timeout: '%s' is not 10-600000 ms",
						 optarg);
			break;
		case OPT_HEARTBEAT:
			if (!parse_u64(optarg, &hb) || hb < 1 || hb > 600000)
				return bad_usage("--heartbeat: '%s' is not 1-600000 ms", optarg);
			break;
		case 'v':
			K.verbose = true;
			break;
		case 'h':
			help();
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!id || !dir)
		return bad_usage("--id and --dir are required");
	if (cluster && join)
		return bad_usage("--cluster (a new cluster) and --join (a node added to a running "
				 "one) exclude each other");
	if (!cluster && !K.address)
		return bad_usage("--address is required without --cluster");
	if (K.address && !valid_addr(K.address))
		return bad_usage("--address: '%s' is not IPV4:PORT", K.address);
	if (hb >= et)
		return bad_usage("--heartbeat must be shorter than --election-timeout");
	if (cluster && parse_cluster(cluster, err, sizeof(err)))
		return bad_usage("bad --cluster: %s", err);
	if (join && parse_join(join, err, sizeof(err)))
		return bad_usage("bad --join: %s", err);
	K.id = id;
	K.joining = join != NULL;
	for (unsigned i = 0; i < K.nnodes; i++)
		if (cluster && K.nodes[i].id == id) {
			if (K.address && strcmp(K.address, K.nodes[i].addr))
				return bad_usage("--address %s is not node %llu's address in "
						 "--cluster (%s)",
						 K.address, (unsigned long long)id,
						 K.nodes[i].addr);
			K.address = K.nodes[i].addr;
		}
	if (!K.address)
		return bad_usage("node %llu is not in --cluster", (unsigned long long)id);
	K.use_delog = strcmp(storage, "delog") == 0;
	if (!K.use_delog && (flush_set || dopts.log_size))
		return bad_usage("--policy and --size are for --storage delog");

	/* a client that goes away mid-reply must not kill the node */
	signal(SIGPIPE, SIG_IGN);
	if ((rv = mkdir_p(dir)) != 0)
		return fail("--dir %s: %s", dir, strerror(-rv));
	fresh = storage_file(dir, K.use_delog) == NULL;
	if (fresh && !cluster && !join)
		return fail("--dir %s holds no node: the first start of a new cluster's node "
			    "takes --cluster, of a node added to a running cluster --join",
			    dir);
	if (fresh && (rv = fresh_check(dir, cluster)) != 0)
		return rv;
	if ((other = storage_file(dir, !K.use_delog)) != NULL)
		return fail("--dir %s holds a node of --storage %s (%s): started on %s it would "
			    "forget its term and vote; use --storage %s, or another directory",
			    dir, K.use_delog ? "uv" : "delog", other, storage,
			    K.use_delog ? "uv" : "delog");
	K.loop = uv_default_loop();
	if ((rv = raft_uv_tcp_init(&K.transport, K.loop)) != 0)
		return fail("transport: %s", raft_strerror(rv));
	K.io.data = NULL;
	rv = K.use_delog ? delog_raft_init(&K.io, K.loop, dir, &K.transport, &dopts) :
			   raft_uv_init(&K.io, K.loop, dir, &K.transport);
	if (rv)
		return fail("storage in %s: %s", dir, K.io.errmsg);
	K.fsm.version = 1;
	K.fsm.apply = fsm_apply;
	K.fsm.snapshot = fsm_snapshot;
	K.fsm.restore = fsm_restore;
	rv = raft_init(&K.raft, &K.io, &K.fsm, K.id, K.address);
	if (rv)
		return fail("init: %s", raft_errmsg(&K.raft));
	raft_set_election_timeout(&K.raft, (unsigned)et);
	raft_set_heartbeat_timeout(&K.raft, (unsigned)hb);
	K.every = (unsigned)every;
	raft_set_snapshot_threshold(&K.raft, (unsigned)every);
	raft_set_snapshot_trailing(&K.raft, (unsigned)trailing);
	raft_set_pre_vote(&K.raft, true);

	/* the client port first: a port in use is reported before Raft starts */
	sscanf(K.address, "%63[^:]:%d", chost, &cport);
	cport += K.client_offset;
	if ((rv = uv_ip4_addr(chost, cport, &sa)) != 0)
		return fail("client address %s:%d: %s", chost, cport, uv_strerror(rv));
	uv_tcp_init(K.loop, &K.server);
	K.server.data = NULL;
	if ((rv = uv_tcp_bind(&K.server, (const struct sockaddr *)&sa, 0)) != 0 ||
	    (rv = uv_listen((uv_stream_t *)&K.server, 128, accept_cb)) != 0)
		return fail("client port %s:%d: %s", chost, cport, uv_strerror(rv));

	/* C-Raft's transport says only "I/O error" when it cannot listen: try first */
	{
		uv_tcp_t probe;
		int prv, pport;
		char phost[64];

		sscanf(K.address, "%63[^:]:%d", phost, &pport);
		uv_tcp_init(K.loop, &probe);
		if ((prv = uv_ip4_addr(phost, pport, &sa)) == 0 &&
		    (prv = uv_tcp_bind(&probe, (const struct sockaddr *)&sa, 0)) == 0)
			prv = uv_listen((uv_stream_t *)&probe, 1, accept_cb);
		uv_close((uv_handle_t *)&probe, NULL);
		uv_run(K.loop, UV_RUN_NOWAIT);
		if (prv)
			return fail("Raft port %s: %s", K.address, uv_strerror(prv));
	}
	/* Bootstrap only now, every address and port checked: a first start that failed
	 * before wrote nothing, so the corrected command is not ignored.  A node that
	 * joins (or restarts without --cluster) bootstraps nothing: its configuration
	 * comes from the leader. */
	if (cluster) {
		raft_configuration_init(&conf);
		for (unsigned i = 0; i < K.nnodes; i++)
			if (raft_configuration_add(&conf, K.nodes[i].id, K.nodes[i].addr,
						   RAFT_VOTER))
				return fail("configuration: out of memory");
		rv = raft_bootstrap(&K.raft, &conf);
		raft_configuration_close(&conf);
		/* raft_bootstrap leaves its own message empty; the io's says why. */
		if (rv && rv != RAFT_CANTBOOTSTRAP)
			return fail("bootstrap in %s: %s: %s", dir, raft_strerror(rv), K.io.errmsg);
	}
	rv = raft_start(&K.raft);
	if (rv)
		return fail("start (Raft address %s, %s): %s: %s", K.address, dir,
			    raft_strerror(rv), K.use_delog ? K.io.errmsg : K.transport.errmsg);
	uv_signal_init(K.loop, &K.sigterm);
	uv_signal_init(K.loop, &K.sigint);
	uv_signal_start(&K.sigterm, on_signal, SIGTERM);
	uv_signal_start(&K.sigint, on_signal, SIGINT);
	uv_timer_init(K.loop, &K.watchdog);
	uv_timer_start(&K.watchdog, watchdog_cb, 100, 100);
	if ((why = stored_conf_refused(dir, cluster)) != NULL) {
		fprintf(stderr, "%s: node %llu: %s\n", prog, (unsigned long long)K.id, why);
		free(why);
		shutdown_node(1);
	} else {
		struct delog_stats ds = { .size = sizeof(ds) };

		fprintf(stderr, "%s: node %llu: Raft %s, clients %s:%d, storage %s, dir %s\n", prog,
			(unsigned long long)K.id, K.address, chost, cport, storage, dir);
		/* a larger --size grew the log at open; a smaller one is never applied */
		if (K.use_delog && dopts.log_size && delog_raft_stats(&K.io, &ds) == 0 &&
		    ds.log_size != dopts.log_size)
			fprintf(stderr,
				"%s: node %llu: --size %llu: %s's delog log stays %llu bytes (a "
				"log is never made smaller)\n",
				prog, (unsigned long long)K.id, (unsigned long long)dopts.log_size,
				dir, (unsigned long long)ds.log_size);
	}
	uv_run(K.loop, UV_RUN_DEFAULT);
	if (K.raft_closed) {
		if (K.use_delog)
			delog_raft_close(&K.io);
		else
			raft_uv_close(&K.io);
		raft_uv_tcp_close(&K.transport);
	}
	map_clear(&K.map);
	free(K.seen);
	uv_loop_close(K.loop);
	return K.exit_code;
}
