/*
 * errors.c - the single error table: every delog code has a distinct value outside the
 * errno range, a name and a message that starts with the name; errno values pass
 * through; unknown codes are reported as such.  A message holds wherever its code
 * arises: DELOG_ECORRUPT's names no place (a superblock of version 0 is corrupt too, and
 * has no torn-write window), DELOG_ETRUNCATED's covers a file too small for a superblock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "delog.h"

static const int codes[] = {
#define X_(name, value, msg) DELOG_##name,
	DELOG_ERRNO_MAP(X_)
#undef X_
};

Test(errors, delog_codes_distinct_named_and_described)
{
	size_t n = sizeof(codes) / sizeof(codes[0]);

	for (size_t i = 0; i < n; i++) {
		const char *name = delog_err_name(codes[i]);
		const char *text = delog_strerror(codes[i]);

		cr_assert(codes[i] < -4095, "code %d inside the errno range", codes[i]);
		cr_assert(strncmp(name, "DELOG_E", 7) == 0, "%d named %s", codes[i], name);
		cr_assert(strncmp(text, name, strlen(name)) == 0, "%s: %s", name, text);
		for (size_t j = 0; j < i; j++)
			cr_assert_neq(codes[i], codes[j]);
	}
	cr_assert_str_eq(delog_err_name(DELOG_ECORRUPT), "DELOG_ECORRUPT");
}

Test(errors, errno_passthrough_and_unknown)
{
	cr_assert_str_eq(delog_err_name(-EIO), "EIO");
	cr_assert(strncmp(delog_strerror(-EINVAL), "EINVAL: ", 8) == 0);
	cr_assert_str_eq(delog_err_name(-123456), "UNKNOWN");
	cr_assert(strncmp(delog_strerror(-123456), "UNKNOWN", 7) == 0);
	cr_assert_str_eq(delog_err_name(0), "OK");
}

Test(errors, messages_hold_wherever_the_code_arises)
{
	cr_assert_str_eq(delog_strerror(DELOG_ECORRUPT), "DELOG_ECORRUPT: log is corrupt");
	cr_assert_null(strstr(delog_strerror(DELOG_ETRUNCATED), "superblock says"), "%s",
		       delog_strerror(DELOG_ETRUNCATED));
	cr_assert_null(strstr(delog_strerror(DELOG_EORPHAN), "continuation record"), "%s",
		       delog_strerror(DELOG_EORPHAN));
	/* -EINVAL arises for a NULL handle, an option, a FIFO...: the text names no one
	 * cause, and points at the call's own reason. */
	cr_assert_not_null(strstr(delog_strerror(-EINVAL), "delog_errmsg()"), "%s",
			   delog_strerror(-EINVAL));
	cr_assert_null(strstr(delog_strerror(-EINVAL), "alignment"), "%s", delog_strerror(-EINVAL));
}

Test(errors, version_matches_header)
{
	char buf[32];

	cr_assert_eq(delog_version(), (unsigned)DELOG_VERSION_HEX);
	snprintf(buf, sizeof(buf), "%d.%d.%d", DELOG_VERSION_MAJOR, DELOG_VERSION_MINOR,
		 DELOG_VERSION_PATCH);
	cr_assert_str_eq(delog_version_string(), buf);
}
