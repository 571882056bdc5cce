/*
 * hello.c - the smallest complete delog program: create a log, commit one transaction,
 * force it to stable storage, close, then reopen and get the item back from recovery.
 *
 *   cc hello.c $(pkg-config --cflags --libs delog) -o hello && ./hello hello.log
 *
 * PATH must be on a filesystem with O_DIRECT (not tmpfs); it is created if missing (a
 * 4 MiB log plus its 4 KiB superblock) and left in place.  Exit status 0 on success.
 */
#include <delog.h>

#include <stdio.h>
#include <string.h>

static const char greeting[] = "hello, world";

struct found {
	uint64_t checkpoints;
	int seen;
};

/* Recovery hands back every complete checkpoint, in order, before delog_open returns. */
static int on_checkpoint(void *arg, const struct delog_checkpoint *ckpt,
			 const struct delog_item *items, size_t nitems)
{
	struct found *f = arg;

	f->checkpoints++;
	for (size_t i = 0; i < nitems; i++)
		if (items[i].key == 1 && items[i].len == sizeof(greeting) &&
		    !memcmp(items[i].data, greeting, sizeof(greeting)))
			f->seen = 1;
	(void)ckpt;
	return 0;
}

int main(int argc, char **argv)
{
	struct delog_options o = { .size = sizeof(o) };
	struct found f = { 0 };
	delog_tx *tx;
	delog *log;
	uint64_t seq;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: hello PATH\n");
		return 2;
	}
	if (delog_version() != DELOG_VERSION_HEX) {
		fprintf(stderr, "hello: built against delog.h %d.%d.%d but linked with %s\n",
			DELOG_VERSION_MAJOR, DELOG_VERSION_MINOR, DELOG_VERSION_PATCH,
			delog_version_string());
		return 1;
	}

	/* 1. Open, creating a small log if PATH does not exist yet. */
	o.flags = DELOG_OPEN_CREATE;
	o.create_size = 4u << 20;
	err = delog_open(argv[1], &o, &log);
	if (err)
		goto fail;

	/* 2. One transaction with one item, committed and forced: durable on return. */
	err = delog_tx_begin(log, sizeof(greeting) + DELOG_ITEM_OVERHEAD, 0, &tx);
	if (!err) {
		err = delog_tx_log(tx, 1, greeting, sizeof(greeting));
		if (err)
			delog_tx_abort(tx);
		else
			err = delog_tx_commit_force(tx, &seq);
	}
	if (err) {
		delog_close(log);
		goto fail;
	}
	/* The item is now safe in the log; a real application writes it back to its own
	 * store and then calls delog_release(log, seq) so the log can reuse the space. */
	err = delog_close(log);
	if (err)
		goto fail;

	/* 3. Reopen: recovery replays every complete checkpoint through the callback. */
	o.flags = 0;
	o.recover = on_checkpoint;
	o.recover_arg = &f;
	err = delog_open(argv[1], &o, &log);
	if (err)
		goto fail;
	err = delog_close(log);
	if (err)
		goto fail;
	if (!f.seen) {
		fprintf(stderr, "hello: the committed item was not recovered\n");
		return 1;
	}
	printf("delog %s: committed checkpoint %llu, recovered %llu checkpoint(s) with \"%s\"\n",
	       delog_version_string(), (unsigned long long)seq, (unsigned long long)f.checkpoints,
	       greeting);
	return 0;

fail:
	fprintf(stderr, "hello: %s: %s\n", argv[1], delog_strerror(err));
	return 1;
}
