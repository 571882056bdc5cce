/*
 * sb.c - the superblock's window (format.h JRNL_INCOMPAT_WINDOW): what jrnl_format writes
 * and what jrnl_sb_read makes of it, 512- and 4096-byte sectors.
 *
 * What it proves:
 *  - default: a log of up to 128 MiB keeps the legacy bound (2 MiB, or half the log) and
 *    sets no feature bit, so an older reader opens it; a 256 MiB log gets a 64th of
 *    itself (4 MiB) with the bit and the field set;
 *  - asked: a window in range is written as asked (the legacy one without the bit); one
 *    below JRNL_WINDOW_MIN, above half the log or not a multiple of the sector is
 *    -EINVAL and nothing is written;
 *  - read: with the bit, a window out of range (CRC made good) is DELOG_ECORRUPT at
 *    offset 64, "sb.window"; without it, whatever the field holds is ignored.
 */
#include <criterion/criterion.h>
#include <delog.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "io_sim.h"
#include "jrnl.h"

#define MiB (1ull << 20)

static const uint32_t SECTORS[2] = { 512, 4096 };

static struct iol_dev *sb_dev(uint32_t S, uint64_t log_bytes)
{
	struct iol_sim_opts so = { .size = sizeof(so),
				   .dev_bytes = JRNL_LOG_START + log_bytes,
				   .sector = S,
				   .seed = 7 };
	struct iol_dev_opts o = { .size = sizeof(o), .backend = "sim", .sim = &so };
	struct iol_dev *dev;

	cr_assert_eq(iol_dev_open(NULL, &o, &dev), 0);
	return dev;
}

/* Format a log of @log_bytes asking for @window; returns jrnl_format's result, the
 * geometry read back in *@g and the superblock as written in *@sb. */
static int sb_format(uint32_t S, uint64_t log_bytes, uint64_t window, struct jrnl_geom *g,
		     struct jrnl_sb *sb)
{
	struct iol_dev *dev = sb_dev(S, log_bytes);
	struct jrnl_format_opts fo = { .sector = S, .log_size = log_bytes, .window = window };
	int err = jrnl_format(dev, &fo, g);

	cr_assert_eq(iol_sim_media(dev, 0, sb, sizeof(*sb)), 0);
	if (!err) {
		struct jrnl_geom g2;

		cr_assert_eq(jrnl_sb_read(dev, &g2), 0);
		cr_assert_eq(g2.window_sectors, g->window_sectors);
	}
	iol_dev_close(dev);
	return err;
}

Test(sb, window_default)
{
	for (int s = 0; s < 2; s++) {
		uint32_t S = SECTORS[s];
		struct jrnl_geom g;
		struct jrnl_sb sb;

		cr_assert_eq(sb_format(S, 4 * MiB, 0, &g, &sb), 0);
		cr_expect_eq(sb.incompat, 0);
		cr_expect_eq(sb.window, 0);
		cr_expect_eq(g.window_sectors, 2 * MiB / S);
		cr_assert_eq(sb_format(S, 128 * MiB, 0, &g, &sb), 0);
		cr_expect_eq(sb.incompat, 0);
		cr_expect_eq(g.window_sectors, JRNL_UNFLUSHED_MAX / S);
		cr_assert_eq(sb_format(S, 256 * MiB, 0, &g, &sb), 0);
		cr_expect_eq(sb.incompat, JRNL_INCOMPAT_WINDOW);
		cr_expect_eq(sb.window, 4 * MiB);
		cr_expect_eq(g.incompat, JRNL_INCOMPAT_WINDOW);
		cr_expect_eq(g.window_sectors, 4 * MiB / S);
	}
}

Test(sb, window_asked)
{
	for (int s = 0; s < 2; s++) {
		uint32_t S = SECTORS[s];
		struct jrnl_geom g;
		struct jrnl_sb sb;

		cr_assert_eq(sb_format(S, 8 * MiB, 4 * MiB, &g, &sb), 0);
		cr_expect_eq(sb.incompat, JRNL_INCOMPAT_WINDOW);
		cr_expect_eq(g.window_sectors, 4 * MiB / S);
		cr_assert_eq(sb_format(S, 8 * MiB, JRNL_WINDOW_MIN, &g, &sb), 0);
		cr_expect_eq(g.window_sectors, JRNL_WINDOW_MIN / S);
		cr_assert_eq(sb_format(S, 8 * MiB, JRNL_UNFLUSHED_MAX, &g, &sb), 0);
		cr_expect_eq(sb.incompat, 0, "the legacy window needs no bit");
		cr_expect_eq(g.window_sectors, JRNL_UNFLUSHED_MAX / S);

		cr_expect_eq(sb_format(S, 8 * MiB, JRNL_WINDOW_MIN - S, &g, &sb), -EINVAL);
		cr_expect_eq(sb.magic, 0, "a refused format wrote a superblock");
		cr_expect_eq(sb_format(S, 8 * MiB, 4 * MiB + S, &g, &sb), -EINVAL);
		cr_expect_eq(sb_format(S, 8 * MiB, 2 * MiB + S / 2, &g, &sb), -EINVAL);
		cr_expect_eq(sb.magic, 0);
	}
}

/* Rewrite the superblock of @dev as @sb with its CRC made good. */
static void sb_put(struct iol_dev *dev, struct jrnl_sb *sb)
{
	void *area = iol_buf_alloc(dev, JRNL_SB_AREA);

	cr_assert(area);
	memset(area, 0, JRNL_SB_AREA);
	sb->crc = jrnl_crc32c(0, sb, offsetof(struct jrnl_sb, crc));
	memcpy(area, sb, sizeof(*sb));
	cr_assert_eq(iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, 0), 0, area, JRNL_SB_AREA, NULL), 0);
	free(area);
}

Test(sb, window_read)
{
	static const uint64_t bad[] = { 0, JRNL_WINDOW_MIN - 4096, 4 * MiB + 4096, 1000 };

	for (int s = 0; s < 2; s++) {
		uint32_t S = SECTORS[s];
		struct iol_dev *dev = sb_dev(S, 8 * MiB);
		struct jrnl_format_opts fo = { .sector = S, .window = 3 * MiB };
		struct jrnl_sb_why why;
		struct jrnl_geom g;
		struct jrnl_sb sb;

		cr_assert_eq(jrnl_format(dev, &fo, &g), 0);
		cr_assert_eq(iol_sim_media(dev, 0, &sb, sizeof(sb)), 0);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			sb.window = bad[i];
			sb_put(dev, &sb);
			cr_expect_eq(jrnl_sb_read_why(dev, &g, &why), DELOG_ECORRUPT, "window %llu",
				     (unsigned long long)bad[i]);
			cr_expect_eq(why.offset, 64);
			cr_expect_str_eq(why.field, "sb.window");
		}
		/* Without the bit the field means nothing: the legacy window. */
		sb.incompat = 0;
		sb.window = 1000;
		sb_put(dev, &sb);
		cr_assert_eq(jrnl_sb_read(dev, &g), 0);
		cr_expect_eq(g.window_sectors, 2 * MiB / S);
		iol_dev_close(dev);
	}
}
