/*
 * record.c - sealing a record for the device and checking one read back.
 *
 * Sealing order matters: saved words are taken and cycles stamped first, the CRC last,
 * so the CRC covers the bytes exactly as they lie on disk (FORMAT.md, "Record CRC").
 * Checking runs the other way round and never writes: header sanity, uuid, size, the
 * cycle of every sector, then the CRC.  A sector with the wrong cycle means the record
 * was not completely written (torn, or never written); a CRC mismatch with every cycle
 * right means the bytes changed after they were written, which the caller may treat as
 * corruption (it knows whether a flush covered the record).
 *
 * Wrap: sectors at log positions >= log_sectors are stamped jrnl_cycle_next(cycle); a
 * wrapped record is checked after being read back contiguously (end part, then start).
 */
#include "record.h"

#include <string.h>

static uint32_t rd32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void wr32(void *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

uint32_t jrnl_sector_cycle(const void *sector)
{
	const unsigned char *p = sector;

	return rd32(p) == JRNL_REC_MAGIC ? rd32(p + 4) : rd32(p);
}

uint32_t jrnl_rec_hdr_sectors_for(uint32_t sector, uint32_t bufsize, uint32_t *payload)
{
	uint32_t total = bufsize / sector, h = 1;

	while (h < total && jrnl_rec_slots(sector, h) < total - h)
		h++;
	if (payload)
		*payload = total - h;
	return h;
}

/* Address of saved-word slot @i in a header of @sector-byte sectors. */
static unsigned char *slot(unsigned char *hdr, uint32_t sector, uint32_t i)
{
	uint32_t first = (sector - JRNL_REC_SAVED_OFF) / 4, ext = (sector - 4) / 4;

	if (i < first)
		return hdr + JRNL_REC_SAVED_OFF + 4 * i;
	i -= first;
	return hdr + (size_t)sector * (1 + i / ext) + 4 + 4 * (i % ext);
}

/* Cycle expected at record-relative sector @k of a record starting at @sector_no. */
static uint32_t cycle_at(uint32_t cycle, uint32_t sector_no, uint64_t log_sectors, uint32_t k)
{
	return (uint64_t)sector_no + k >= log_sectors ? jrnl_cycle_next(cycle) : cycle;
}

static uint32_t rec_crc(const unsigned char *rec, uint32_t sector, uint32_t h, uint32_t p)
{
	static const uint32_t zero;
	uint32_t crc;

	crc = jrnl_crc32c(0, rec, offsetof(struct jrnl_rec, crc));
	crc = jrnl_crc32c(crc, &zero, sizeof(zero));
	crc = jrnl_crc32c(crc, rec + offsetof(struct jrnl_rec, crc) + 4,
			  (size_t)h * sector - offsetof(struct jrnl_rec, crc) - 4);
	return jrnl_crc32c(crc, rec + (size_t)h * sector, (size_t)p * sector);
}

size_t jrnl_rec_seal(void *buf, uint32_t sector, const struct jrnl_rec_fill *f)
{
	unsigned char *rec = buf;
	struct jrnl_rec *hdr = buf;
	uint32_t h = f->hdr_sectors, p = (f->len + sector - 1) / sector;

	memset(rec, 0, (size_t)h * sector);
	hdr->magic = JRNL_REC_MAGIC;
	hdr->cycle = f->cycle;
	hdr->version = JRNL_FORMAT_VERSION;
	hdr->len = f->len;
	hdr->lsn = jrnl_lsn(f->cycle, f->sector_no);
	hdr->tail_lsn = f->tail_lsn;
	hdr->durable_lsn = f->durable_lsn;
	hdr->prev_lsn = f->prev_lsn;
	hdr->num_ops = f->num_ops;
	hdr->hdr_sectors = h;
	hdr->payload_sectors = p;
	memcpy(hdr->uuid, f->uuid, sizeof(hdr->uuid));
	hdr->logbufs = f->logbufs;
	hdr->logbsize = f->logbsize;
	/* Zero the padding after the ops so the CRC covers defined bytes. */
	if (f->len % sector)
		memset(rec + (size_t)h * sector + f->len, 0, sector - f->len % sector);
	for (uint32_t j = 1; j < h; j++)
		wr32(rec + (size_t)j * sector, cycle_at(f->cycle, f->sector_no, f->log_sectors, j));
	for (uint32_t i = 0; i < p; i++) {
		unsigned char *s = rec + (size_t)(h + i) * sector;

		memcpy(slot(rec, sector, i), s, 4);
		wr32(s, cycle_at(f->cycle, f->sector_no, f->log_sectors, h + i));
	}
	hdr->crc = rec_crc(rec, sector, h, p);
	return (size_t)(h + p) * sector;
}

enum jrnl_rec_verdict jrnl_rec_check(const void *buf, size_t avail, uint32_t sector,
				     uint64_t log_sectors, uint32_t sector_no,
				     const uint8_t uuid[16], const struct jrnl_rec **out)
{
	const unsigned char *rec = buf;
	const struct jrnl_rec *hdr = buf;
	uint32_t h, p;

	if (avail < sector || hdr->magic != JRNL_REC_MAGIC)
		return JRNL_REC_NOT_HEADER;
	/* The superblock's magic begins with the record's: a copy of it (a torn sector that
	 * reads back another sector's bytes) is no record, not another log's.  Checked only
	 * once the uuid failed (a superblock has zeroes there), so a record whose cycle
	 * happens to read as the magic's second half stays a record. */
	if (memcmp(hdr->uuid, uuid, sizeof(hdr->uuid)))
		return !memcmp(rec, &(uint64_t){ JRNL_SB_MAGIC }, sizeof(uint64_t)) ?
			       JRNL_REC_NOT_HEADER :
			       JRNL_REC_FOREIGN;
	if (hdr->version > JRNL_FORMAT_VERSION)
		return JRNL_REC_VERSION;
	h = hdr->hdr_sectors;
	p = hdr->payload_sectors;
	if (hdr->version == 0 || jrnl_lsn_cycle(hdr->lsn) != hdr->cycle)
		return JRNL_REC_NOT_HEADER;
	/* A header of this log whose layout does not fit this geometry was written under
	 * another one (a superblock whose sector or log size was changed), or was damaged
	 * at rest: no torn write makes one.  A header that fits but names another sector
	 * can be a torn sector that reads back another sector's bytes. */
	if (h == 0 || h > JRNL_MAX_LOGBSIZE / sector || p > JRNL_MAX_LOGBSIZE / sector ||
	    jrnl_rec_slots(sector, h) < p || (uint64_t)p * sector < hdr->len ||
	    (p && (uint64_t)(p - 1) * sector >= hdr->len) || (uint64_t)h + p > log_sectors ||
	    jrnl_lsn_sector(hdr->lsn) >= log_sectors)
		return JRNL_REC_GEOMETRY;
	if (jrnl_lsn_sector(hdr->lsn) != sector_no)
		return JRNL_REC_MISPLACED;
	if ((size_t)(h + p) * sector > avail)
		return JRNL_REC_SHORT;
	for (uint32_t k = 0; k < h + p; k++)
		if (jrnl_sector_cycle(rec + (size_t)k * sector) !=
		    cycle_at(hdr->cycle, sector_no, log_sectors, k))
			return JRNL_REC_TORN;
	if (rec_crc(rec, sector, h, p) != hdr->crc)
		return JRNL_REC_CRC;
	if (out)
		*out = hdr;
	return JRNL_REC_OK;
}

void jrnl_rec_unpack(void *buf, uint32_t sector)
{
	unsigned char *rec = buf;
	const struct jrnl_rec *hdr = buf;
	uint32_t h = hdr->hdr_sectors, p = hdr->payload_sectors;

	for (uint32_t i = 0; i < p; i++)
		memcpy(rec + (size_t)(h + i) * sector, slot(rec, sector, i), 4);
}
