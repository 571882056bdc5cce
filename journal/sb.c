/*
 * sb.c - the superblock: written once by jrnl_format, read and checked by every open.
 *
 * The superblock never changes after format, so the commit path never writes it and a
 * torn superblock can only come from a crash during format; jrnl_format therefore writes
 * the zeroed log first, flushes, and only then writes the superblock with FUA: a log
 * whose superblock checks out has a fully zeroed log area behind it.
 *
 * Checks run from "is this ours at all" to "can we read it": size, magic, CRC, version,
 * incompatible features, geometry; each has its own error code (delog.h), so a foreign
 * file, a damaged superblock and a log from a newer delog are told apart.
 */
#include "format.h"
#include "jrnl.h"

#include <delog.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* The smallest log: room for the largest records of a full ring twice over. */
#define MIN_LOG_BYTES (2ull * JRNL_MAX_LOGBUFS * JRNL_MAX_LOGBSIZE)

/* delog.h publishes these limits; they are the format's. */
static_assert(DELOG_SB_BYTES == JRNL_SB_AREA && DELOG_SB_BYTES == JRNL_LOG_START,
	      "DELOG_SB_BYTES is the superblock area");
static_assert(DELOG_LOG_MIN_BYTES == MIN_LOG_BYTES, "DELOG_LOG_MIN_BYTES");
static_assert(DELOG_LOGBUFS_MIN == JRNL_MIN_LOGBUFS && DELOG_LOGBUFS_MAX == JRNL_MAX_LOGBUFS,
	      "DELOG_LOGBUFS_MIN/MAX");
static_assert(DELOG_LOGBSIZE_MIN == JRNL_MIN_LOGBSIZE && DELOG_LOGBSIZE_MAX == JRNL_MAX_LOGBSIZE,
	      "DELOG_LOGBSIZE_MIN/MAX");
static_assert(DELOG_ITEM_MAX == JRNL_MAX_ITEM, "DELOG_ITEM_MAX (the engine uses JRNL_MAX_ITEM)");

static uint32_t sb_crc(const struct jrnl_sb *sb)
{
	return jrnl_crc32c(0, sb, offsetof(struct jrnl_sb, crc));
}

/* Say why the superblock is refused: the field's offset and name, and a sentence about
 * it. */
#define SB_WHY(f, ...)                                                                             \
	do {                                                                                       \
		if (why) {                                                                         \
			why->offset = offsetof(struct jrnl_sb, f);                                 \
			why->field = "sb." #f;                                                     \
			snprintf(why->what, sizeof(why->what), __VA_ARGS__);                       \
		}                                                                                  \
	} while (0)

/*
 * The superblock checks, one field at a time, from "is this ours at all" to "can we read
 * it"; each refusal names its field in @why (may be NULL).  Version 0 was never written
 * by any delog: it is damage (DELOG_ECORRUPT) at the version field, not a newer format.
 */
static int sb_verify(const struct jrnl_sb *sb, uint64_t dev_bytes, struct jrnl_sb_why *why)
{
	uint32_t crc;

	if (sb->magic != JRNL_SB_MAGIC) {
		SB_WHY(magic, "magic %#018llx, expected %#018llx (\"DLOGGSB1\")",
		       (unsigned long long)sb->magic, (unsigned long long)JRNL_SB_MAGIC);
		return DELOG_ENOTLOG;
	}
	crc = sb_crc(sb);
	if (sb->crc != crc) {
		SB_WHY(crc, "crc %#010x, but bytes 0-%zu give %#010x", sb->crc,
		       offsetof(struct jrnl_sb, crc) - 1, crc);
		return DELOG_ECHECKSUM;
	}
	if (sb->version > JRNL_FORMAT_VERSION) {
		SB_WHY(version, "format version %u, this build reads version %u", sb->version,
		       JRNL_FORMAT_VERSION);
		return DELOG_EVERSION;
	}
	if (sb->incompat & ~JRNL_INCOMPAT_KNOWN) {
		SB_WHY(incompat, "incompatible feature bits %#x, this build knows %#x",
		       sb->incompat, JRNL_INCOMPAT_KNOWN);
		return DELOG_EFEATURE;
	}
	if (sb->version == 0) {
		SB_WHY(version, "format version 0: no such version (they start at 1)");
		return DELOG_ECORRUPT;
	}
	if (sb->sector_size != 512 && sb->sector_size != 4096) {
		SB_WHY(sector_size, "sector_size %u: must be 512 or 4096", sb->sector_size);
		return DELOG_ECORRUPT;
	}
	if (sb->log_start != JRNL_LOG_START) {
		SB_WHY(log_start, "log_start %llu: must be %u", (unsigned long long)sb->log_start,
		       JRNL_LOG_START);
		return DELOG_ECORRUPT;
	}
	if (sb->log_size % sb->sector_size) {
		SB_WHY(log_size, "log_size %llu: not a multiple of the %u-byte sector",
		       (unsigned long long)sb->log_size, sb->sector_size);
		return DELOG_ECORRUPT;
	}
	if (sb->log_size < MIN_LOG_BYTES) {
		SB_WHY(log_size, "log_size %llu: below the smallest log, %llu bytes",
		       (unsigned long long)sb->log_size, (unsigned long long)MIN_LOG_BYTES);
		return DELOG_ECORRUPT;
	}
	if (sb->log_size / sb->sector_size > UINT32_MAX) {
		SB_WHY(log_size, "log_size %llu: more than 2^32 - 1 sectors of %u bytes",
		       (unsigned long long)sb->log_size, sb->sector_size);
		return DELOG_ECORRUPT;
	}
	if (sb->incompat & JRNL_INCOMPAT_WINDOW) {
		if (sb->window % sb->sector_size || sb->window < JRNL_WINDOW_MIN ||
		    sb->window > sb->log_size / 2) {
			SB_WHY(window,
			       "window %llu: must be a multiple of the %u-byte sector from %u "
			       "to half the log, %llu",
			       (unsigned long long)sb->window, sb->sector_size, JRNL_WINDOW_MIN,
			       (unsigned long long)(sb->log_size / 2));
			return DELOG_ECORRUPT;
		}
	}
	if (sb->log_start + sb->log_size > dev_bytes) {
		if (why) {
			why->offset = dev_bytes;
			why->field = "";
			snprintf(why->what, sizeof(why->what),
				 "the superblock's log ends at byte %llu (log_start + log_size), "
				 "but the device or file ends at byte %llu",
				 (unsigned long long)(sb->log_start + sb->log_size),
				 (unsigned long long)dev_bytes);
		}
		return DELOG_ETRUNCATED;
	}
	return 0;
}

#undef SB_WHY

static int sb_check(const struct jrnl_sb *sb, uint64_t dev_bytes, struct jrnl_geom *g,
		    struct jrnl_sb_why *why)
{
	int err = sb_verify(sb, dev_bytes, why);

	if (err)
		return err;
	g->version = sb->version;
	g->incompat = sb->incompat;
	g->sector = sb->sector_size;
	g->log_start = sb->log_start;
	g->log_size = sb->log_size;
	g->log_sectors = sb->log_size / sb->sector_size;
	memcpy(g->uuid, sb->uuid, sizeof(g->uuid));
	g->format_time = sb->format_time;
	g->window_sectors = sb->incompat & JRNL_INCOMPAT_WINDOW ?
				    sb->window / sb->sector_size :
				    jrnl_window_legacy(g->log_sectors, g->sector);
	return 0;
}

/* A superblock area of zeroes (never formatted, or wiped) says so rather than quoting
 * its magic. */
static void sb_why_zero(const void *area, struct jrnl_sb_why *why)
{
	const unsigned char *b = area;
	size_t i = 0;

	while (i < JRNL_SB_AREA && !b[i])
		i++;
	if (i == JRNL_SB_AREA)
		snprintf(why->what, sizeof(why->what),
			 "the first %u bytes are zero (never formatted?)", JRNL_SB_AREA);
}

int jrnl_sb_read_why(struct iol_dev *dev, struct jrnl_geom *out, struct jrnl_sb_why *why)
{
	const struct iol_geom *ig = iol_dev_geom(dev);
	void *buf;
	int err;

	if (why) {
		why->offset = 0;
		why->field = "";
		why->what[0] = 0;
	}
	if (ig->size_bytes < JRNL_SB_AREA) {
		if (why) {
			why->offset = ig->size_bytes;
			snprintf(why->what, sizeof(why->what),
				 "%s is %llu bytes, smaller than the %u-byte superblock area",
				 ig->is_blockdev ? "the device" : "the file",
				 (unsigned long long)ig->size_bytes, JRNL_SB_AREA);
		}
		return DELOG_ETRUNCATED;
	}
	buf = iol_buf_alloc(dev, JRNL_SB_AREA);
	if (!buf)
		return -ENOMEM;
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_READ, 0), 0, buf, JRNL_SB_AREA, NULL);
	if (!err)
		err = sb_check(buf, ig->size_bytes, out, why);
	if (err == DELOG_ENOTLOG && why)
		sb_why_zero(buf, why);
	free(buf);
	return err;
}

int jrnl_sb_read(struct iol_dev *dev, struct jrnl_geom *out)
{
	return jrnl_sb_read_why(dev, out, NULL);
}

int jrnl_sector_check(struct iol_dev *dev, uint32_t sector, char *why, size_t len)
{
	uint32_t pb = iol_dev_geom(dev)->physical_block;

	if (!pb || (sector >= pb && pb <= 4096))
		return 0;
	if (why && pb > 4096)
		snprintf(why, len,
			 "the device's physical block is %u bytes, larger than the largest log "
			 "sector (4096): a torn write of one physical block could garble sectors "
			 "written before the record in flight",
			 pb);
	else if (why)
		snprintf(why, len,
			 "%u-byte sectors on a device whose physical block is %u bytes: a torn "
			 "write of one physical block could garble sectors written before the "
			 "record in flight; use %u-byte sectors",
			 sector, pb, pb);
	return DELOG_EGEOMETRY;
}

/* The window jrnl_format writes for a log of @log_size bytes of @sector-byte sectors:
 * @asked, or 0 for the default rule.  0 when @asked is out of range. */
static uint64_t sb_window_pick(uint64_t log_size, uint32_t sector, uint64_t asked)
{
	uint64_t w = asked;

	if (!w) {
		w = log_size / 64;
		w = w < JRNL_UNFLUSHED_MAX ? JRNL_UNFLUSHED_MAX : w;
		w = w > JRNL_WINDOW_DEFAULT_MAX ? JRNL_WINDOW_DEFAULT_MAX : w;
		w = w > log_size / 2 ? log_size / 2 : w;
		w -= w % sector;
	}
	if (w % sector || w < JRNL_WINDOW_MIN || w > log_size / 2)
		return 0;
	return w;
}

int jrnl_format(struct iol_dev *dev, const struct jrnl_format_opts *opts, struct jrnl_geom *out)
{
	const struct iol_geom *ig = iol_dev_geom(dev);
	uint32_t sector = opts && opts->sector ? opts->sector : 4096;
	uint64_t log_size = opts ? opts->log_size : 0, window;
	const size_t chunk = 4u << 20;
	struct jrnl_sb *sb;
	struct iol_req flush;
	void *zero;
	int err;

	if ((sector != 512 && sector != 4096) || sector < ig->dio_off_align ||
	    ig->size_bytes < JRNL_LOG_START)
		return -EINVAL;
	if (jrnl_sector_check(dev, sector, NULL, 0))
		return DELOG_EGEOMETRY;
	if (!log_size)
		log_size = (ig->size_bytes - JRNL_LOG_START) / sector * sector;
	if (log_size % sector || log_size < MIN_LOG_BYTES ||
	    log_size > ig->size_bytes - JRNL_LOG_START || log_size / sector > UINT32_MAX)
		return -EINVAL;
	window = sb_window_pick(log_size, sector, opts ? opts->window : 0);
	if (!window)
		return -EINVAL;

	zero = iol_buf_alloc(dev, chunk);
	if (!zero)
		return -ENOMEM;
	memset(zero, 0, chunk);
	for (uint64_t off = 0; off < JRNL_LOG_START + log_size; off += chunk) {
		uint64_t n = JRNL_LOG_START + log_size - off;

		err = iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, 0), off, zero, n < chunk ? n : chunk,
				  NULL);
		if (err)
			goto out;
		if (opts && opts->progress)
			opts->progress(opts->progress_arg, off + (n < chunk ? n : chunk),
				       JRNL_LOG_START + log_size);
	}
	err = iol_req_init(&flush, dev, 0, IOL_OPF(IOL_OP_FLUSH, 0));
	if (!err)
		err = iol_submit_wait(&flush);
	if (err)
		goto out;

	sb = zero; /* first 4096 bytes, still zero */
	sb->magic = JRNL_SB_MAGIC;
	sb->version = JRNL_FORMAT_VERSION;
	sb->sector_size = sector;
	sb->log_start = JRNL_LOG_START;
	sb->log_size = log_size;
	/* The legacy window needs no bit, so an older reader still opens such a log. */
	if (window != jrnl_window_legacy(log_size / sector, sector) * sector) {
		sb->incompat |= JRNL_INCOMPAT_WINDOW;
		sb->window = window;
	}
	if (opts && opts->uuid) {
		memcpy(sb->uuid, opts->uuid, sizeof(sb->uuid));
	} else {
		if (getrandom(sb->uuid, sizeof(sb->uuid), 0) != (ssize_t)sizeof(sb->uuid)) {
			err = -errno;
			goto out;
		}
		sb->uuid[6] = (uint8_t)((sb->uuid[6] & 0x0f) | 0x40); /* RFC 4122 version 4 */
		sb->uuid[8] = (uint8_t)((sb->uuid[8] & 0x3f) | 0x80);
	}
	sb->format_time = (uint64_t)time(NULL);
	sb->crc = sb_crc(sb);
	err = iol_rw_wait(dev, IOL_OPF(IOL_OP_WRITE, IOL_FUA), 0, sb, JRNL_SB_AREA, NULL);
	if (!err && out)
		err = sb_check(sb, ig->size_bytes, out, NULL);
out:
	free(zero);
	return err;
}
