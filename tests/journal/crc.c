/*
 * crc.c - CRC32c through ISA-L: the standard check value, the RFC 3720 (iSCSI) B.4
 * vectors, and that incremental use equals one pass.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "jrnl.h"

Test(crc, check_value)
{
	cr_assert_eq(jrnl_crc32c(0, "123456789", 9), 0xE3069283u);
}

Test(crc, rfc3720_vectors)
{
	unsigned char buf[32];

	memset(buf, 0, sizeof(buf));
	cr_assert_eq(jrnl_crc32c(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	cr_assert_eq(jrnl_crc32c(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	cr_assert_eq(jrnl_crc32c(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	cr_assert_eq(jrnl_crc32c(0, buf, 32), 0x113FDB5Cu);
}

Test(crc, incremental_equals_whole)
{
	unsigned char buf[1000];
	uint32_t whole, part;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	whole = jrnl_crc32c(0, buf, sizeof(buf));
	for (size_t cut = 0; cut <= sizeof(buf); cut += 37) {
		part = jrnl_crc32c(jrnl_crc32c(0, buf, cut), buf + cut, sizeof(buf) - cut);
		cr_assert_eq(part, whole, "split at %zu", cut);
	}
	cr_assert_eq(jrnl_crc32c(whole, NULL, 0), whole);
}
