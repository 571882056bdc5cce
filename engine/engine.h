/*
 * engine.h - engine entry points for delog's own tests and tools (not installed).
 *
 * engine_open_dev runs the log on a device the caller already opened, typically the
 * simulated disk (iolayer/include/io_sim.h) so tests can inject faults, delay or reorder
 * completions and crash it.  The device must stay open until delog_close returned; the
 * log never closes it.
 */
#ifndef DELOG_ENGINE_H
#define DELOG_ENGINE_H

#include <delog.h>

#include "io.h"

/* As delog_open, on @dev.  DELOG_OPEN_CREATE formats a device that holds no log
 * (DELOG_ENOTLOG), DELOG_OPEN_FORMAT formats it whatever it holds; create_size 0 means
 * the whole device.  DELOG_OPEN_RDONLY writes nothing to @dev whatever it is (a sim
 * disk too; @dev need not have been opened read-only). */
int engine_open_dev(struct iol_dev *dev, const struct delog_options *opts, delog **out);

/* The device a log runs on (for tests: sim faults and crashes). */
struct iol_dev *engine_dev(delog *log);

/* The journal's own counters of the log (journal/include/jrnl.h: bound and cover flushes,
 * wraps, ...), which delog_stats sums into space_flushes: for the crash checker's
 * coverage.  Any thread, like delog_stats. */
struct jrnl_log_stats;
void engine_journal_stats(delog *log, struct jrnl_log_stats *out);

/* For the crash checker's own test: the push thread sleeps @ns before each cover record it
 * writes (jrnl_log_cover), as a thread descheduled on a loaded machine would.  A waiter's
 * bound must then come from the log's progress, never from a fixed time.  0: no delay. */
void engine_delay_cover(delog *log, uint64_t ns);

/* A follower (delog_reader) of the log on @dev, which a writer in this process, @writer,
 * may be writing (a sim disk: no path, no shared page): the watermark is @writer's
 * delog_durable_seq (without a writer, the log as it lies), and waits poll.  @dev stays
 * the caller's and must outlive the reader; @writer must outlive it too. */
int engine_reader_open_dev(struct iol_dev *dev, delog *writer, uint64_t from, delog_reader **out);

/* The address of the calling thread's record of the last public call it entered (its
 * name, a string literal: "delog_force"; NULL before the first), for a watchdog on another
 * thread to read while this thread lives: the crash tester names the call a hung
 * workload thread is in.  Calls that cannot block and cannot fail (delog_durable_seq,
 * delog_error) do not record themselves. */
_Atomic(const char *) *engine_call_slot(void);

/* Call @fn(@arg, name) at the entry of every public call that records itself (as
 * engine_call_slot does), on the calling thread only, before the call does anything
 * else; NULL removes it.  The crash tester's serial mode stops a workload thread there
 * until its turn. */
void engine_set_enter_hook(void (*fn)(void *arg, const char *call), void *arg);

#endif
