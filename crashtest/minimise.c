/*
 * minimise.c - a failing handle shrunk to the sectors the failure needs.
 *
 * Greedy, to a fixed point: each sector the state does not leave old is tried old; if
 * the state still fails (REPLAY and CHECK once, as delog_ct_replay runs them) it stays
 * old.  Repeated until a whole pass changes nothing, so every sector left is needed:
 * made old alone, it would let the state pass.  The result is not the least such set
 * over all orders (that search is exponential), but no sector of it can go.  The crash
 * point stays the one the campaign found, the earliest failing one of its run: points
 * are checked in the order they were taken and a run stops at its first failure.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ct_private.h"

/* One pass: each sector not old tried old.  Returns how many stayed old, or an error. */
static int shrink_pass(struct ct_worker *w, const struct delog_ct_app *app, struct ct_handle *h)
{
	char why[512];
	int made = 0;

	for (size_t i = 0; i < h->pt.k; i++) {
		uint8_t c = h->choice[i];
		int r;

		if (c == CT_OLD)
			continue;
		h->choice[i] = CT_OLD;
		r = ct_handle_check(w, app, h, why, sizeof(why));
		if (r < 0)
			return r;
		if (r == 1) {
			made++;
			snprintf(h->why, sizeof(h->why), "%s", why);
		} else {
			h->choice[i] = c;
		}
	}
	return made;
}

int delog_ct_minimise(const char *path, const struct delog_ct_app *app, const char *out,
		      char *state, size_t statelen)
{
	struct ct_handle h;
	struct ct_worker w;
	int err, r;

	err = ct_handle_load(path, app, &h, &w);
	if (err)
		return err;
	r = ct_handle_check(&w, app, &h, h.why, sizeof(h.why));
	while (r == 1 && (err = shrink_pass(&w, app, &h)) > 0)
		;
	if (r == 1 && err >= 0)
		err = ct_handle_write(out, &h.pt, h.choice, h.why);
	else if (r == 0)
		err = 1;
	else if (r < 0)
		err = r;
	if (err == 0 && state && statelen)
		ct_describe(&h.pt, h.choice, state, statelen);
	ct_handle_unload(&h, &w, app);
	return err;
}
