/*
 * error.c - one table of error codes for the whole library (DELOG_ERRNO_MAP in delog.h)
 * plus the errno values delog passes through, and each thread's reason for its last
 * failed call.  Messages start with the symbol, as LMDB's mdb_strerror does, so a log
 * line alone says which code it was.
 *
 *  (E1) The reason belongs to the call that failed: every public call that can fail
 *       clears the calling thread's reason on entry (error_clear), and a refusal that
 *       knows more than its code says it (error_say) as it returns.  So delog_errmsg()
 *       is that call's reason, or "" when it had none beyond the code, never an older
 *       call's.  The questions an error handler asks first (delog_error,
 *       delog_durable_seq, and the tables) clear nothing, so they may come between the
 *       failure and the reading.  It is thread-local, as errno is: calls on
 *       independent handles in independent threads share nothing.  Entering a call
 *       also records its name (error_enter), which a watchdog on another thread reads
 *       through engine_call_slot to say where a thread that does not return is,
 *       and calls the thread's enter hook (engine_set_enter_hook), where the crash
 *       tester's serial mode stops the thread until its turn.
 */
#include "engine_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

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
	X(EINVAL, "invalid argument (delog_errmsg() says which, and why)")                         \
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

static _Thread_local char error_msg[256];
/* The public call this thread entered last, for a watchdog on another thread. */
static _Thread_local _Atomic(const char *) error_call;
/* engine_set_enter_hook's hook for this thread, called at the entry of each public call. */
static _Thread_local void (*error_hook)(void *arg, const char *call);
static _Thread_local void *error_hook_arg;

void error_clear(void)
{
	error_msg[0] = '\0';
}

void error_enter(const char *call)
{
	atomic_store_explicit(&error_call, call, memory_order_relaxed);
	error_msg[0] = '\0';
	if (error_hook)
		error_hook(error_hook_arg, call);
}

void engine_set_enter_hook(void (*fn)(void *arg, const char *call), void *arg)
{
	error_hook = fn;
	error_hook_arg = arg;
}

_Atomic(const char *) *engine_call_slot(void)
{
	return &error_call;
}

int error_say(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(error_msg, sizeof(error_msg), fmt, ap);
	va_end(ap);
	return code;
}

const char *delog_errmsg(void)
{
	return error_msg;
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
