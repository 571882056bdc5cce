/*
 * error.c - one table of error codes for the whole library (DELOG_ERRNO_MAP in delog.h)
 * plus the errno values delog passes through.  Messages start with the symbol, as LMDB's
 * mdb_strerror does, so a log line alone says which code it was.
 */
#include "delog.h"

#include <errno.h>
#include <stddef.h>

#define STR_(x) #x
#define STR(x) STR_(x)

/* errno values delog returns; the text is ours, so it does not depend on the locale. */
#define ERRNO_MAP(X)                                                                               \
	X(EPERM, "operation not permitted")                                                        \
	X(E2BIG, "transaction too large (more than a quarter of the log)")                         \
	X(ENOENT, "no such file or directory")                                                     \
	X(EINTR, "interrupted system call")                                                        \
	X(EIO, "input/output error")                                                               \
	X(EBADF, "bad file descriptor (device opened read-only?)")                                 \
	X(EAGAIN, "resource temporarily unavailable (would block)")                                \
	X(ENOMEM, "out of memory")                                                                 \
	X(EACCES, "permission denied")                                                             \
	X(EBUSY, "device or resource busy")                                                        \
	X(EEXIST, "file exists")                                                                   \
	X(ENODEV, "no such device (backend not available)")                                        \
	X(ENOTDIR, "not a directory")                                                              \
	X(EISDIR, "is a directory")                                                                \
	X(EINVAL, "invalid argument (an option, or an I/O size or alignment the device refuses)")  \
	X(EFBIG, "file too large")                                                                 \
	X(ENOSPC, "no space left on device")                                                       \
	X(EROFS, "read-only file system (DELOG_OPEN_RDONLY opens a log there)")                    \
	X(ERANGE, "result out of range")                                                           \
	X(EDEADLK, "every open transaction waits for space only their commits can free")           \
	X(ENOSYS, "function not implemented by the kernel")                                        \
	X(ENODATA, "no data available")                                                            \
	X(EOVERFLOW, "value too large")                                                            \
	X(ENOTSUP, "operation not supported")                                                      \
	X(ESHUTDOWN, "cannot send after transport endpoint shutdown (device closing)")             \
	X(ETIMEDOUT, "timed out")                                                                  \
	X(ECANCELED, "operation canceled")                                                         \
	X(ELOOP, "too many levels of symbolic links")

struct err_entry {
	int code;
	const char *name;
	const char *text; /* "NAME: message" */
};

static const struct err_entry table[] = {
#define DELOG_ENTRY_(name, value, msg) { value, "DELOG_" #name, "DELOG_" #name ": " msg },
	DELOG_ERRNO_MAP(DELOG_ENTRY_)
#undef DELOG_ENTRY_
#define ERRNO_ENTRY_(name, msg) { -name, #name, #name ": " msg },
		ERRNO_MAP(ERRNO_ENTRY_)
#undef ERRNO_ENTRY_
};

static const struct err_entry *find(int err)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].code == err)
			return &table[i];
	return NULL;
}

const char *delog_strerror(int err)
{
	const struct err_entry *e;

	if (err == 0)
		return "success";
	e = find(err);
	return e ? e->text : "UNKNOWN: unknown error code";
}

const char *delog_err_name(int err)
{
	const struct err_entry *e = err ? find(err) : NULL;

	return err == 0 ? "OK" : e ? e->name : "UNKNOWN";
}

unsigned delog_version(void)
{
	return DELOG_VERSION_HEX;
}

const char *delog_version_string(void)
{
	return STR(DELOG_VERSION_MAJOR) "." STR(DELOG_VERSION_MINOR) "." STR(DELOG_VERSION_PATCH);
}
