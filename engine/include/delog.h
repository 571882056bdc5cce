/*
 * delog.h - the public interface of delog, an embeddable write-ahead log built on the
 * XFS "delayed logging" design.  This is the only header an application includes.
 *
 * Conventions (they hold for every function declared here):
 *  - Every function that can fail returns int: 0 on success, or a negative error code.
 *    Operating-system errors pass through as -errno (-EIO, -ENOSPC, ...); delog's own
 *    conditions use the DELOG_E* codes below, which lie outside the errno range.
 *    delog_strerror() and delog_err_name() describe either kind.
 *  - No global state: everything lives in handles, so independent handles may be used
 *    from independent threads without coordination.
 *  - Each function states its thread safety.
 */
#ifndef DELOG_H
#define DELOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Library version (the on-disk format has its own version; see docs/FORMAT.md).
 * 0.y.z may change the API at every minor release.  CMake reads these lines. */
#define DELOG_VERSION_MAJOR 0
#define DELOG_VERSION_MINOR 1
#define DELOG_VERSION_PATCH 0
#define DELOG_VERSION_HEX                                                              \
	((DELOG_VERSION_MAJOR << 16) | (DELOG_VERSION_MINOR << 8) | DELOG_VERSION_PATCH)

/*
 * delog's own error codes, all below -9000 so they never collide with -errno.
 * X(name, value, message): the single table behind delog_strerror/delog_err_name.
 */
#define DELOG_ERRNO_MAP(X)                                                               \
	X(ECORRUPT, -9001, "log is corrupt: damage behind the torn-write window")         \
	X(ECHECKSUM, -9002, "checksum mismatch")                                          \
	X(EVERSION, -9003, "log format version is newer than this library supports")      \
	X(EFEATURE, -9004, "log uses an incompatible feature this library does not know")\
	X(ENOTLOG, -9005, "not a delog log (bad magic)")                                  \
	X(ETRUNCATED, -9006, "log is shorter than its superblock says")                   \
	X(EFOREIGN, -9007, "record belongs to another log (UUID mismatch)")               \
	X(EBADOP, -9008, "malformed log operation")                                       \
	X(EORPHAN, -9009, "continuation record without its start")                        \
	X(ESHUTDOWN, -9010, "log is shut down after an I/O error")                        \
	X(ELOGFULL, -9011, "log is full")

enum delog_err {
#define DELOG_ERR_ENUM_(name, value, msg) DELOG_##name = value,
	DELOG_ERRNO_MAP(DELOG_ERR_ENUM_)
#undef DELOG_ERR_ENUM_
};

/* Human-readable text for a delog code or a negative errno, starting with its symbolic
 * name ("DELOG_ECORRUPT: ...", "EIO: ...").  Returns a static string; thread-safe. */
const char *delog_strerror(int err);

/* Symbolic name of a code ("DELOG_ECORRUPT", "EIO"), or "UNKNOWN".  Static; thread-safe. */
const char *delog_err_name(int err);

/* Run-time version: DELOG_VERSION_HEX and "MAJOR.MINOR.PATCH" of the library actually
 * linked (compare with the macros above to detect a header/library mismatch).
 * Thread-safe. */
unsigned delog_version(void);
const char *delog_version_string(void);

#ifdef __cplusplus
}
#endif
#endif
