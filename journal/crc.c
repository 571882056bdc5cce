/*
 * crc.c - CRC32c for every checksum in the log (superblock, record headers and
 * payloads, checkpoint commit ops).
 *
 * ISA-L's crc32_iscsi(buf, len, init) runs the reflected Castagnoli CRC from @init and
 * returns the register without the final inversion; the standard CRC32c is therefore
 * ~crc32_iscsi(buf, len, 0xFFFFFFFF).  Chaining keeps the standard value between calls:
 * the register is ~crc.  ISA-L picks a hardware (SSE4.2 crc32 / PCLMUL) path at run time.
 */
#include "jrnl.h"

#include <isa-l.h>

uint32_t jrnl_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* crc32_iscsi takes an int length; feed huge buffers in pieces. */
	const unsigned char *p = buf;

	crc = ~crc;
	while (len) {
		int n = len > (1u << 30) ? (1 << 30) : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return ~crc;
}
