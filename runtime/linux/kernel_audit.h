/* The kernel's audit subsystem, as far as counting Landlock's refusals
 * needs it. Landlock (ABI 7) reports a refusal nowhere but there, and only
 * while audit is enabled; every record then also goes to the netlink audit
 * multicast (AUDIT_NLGRP_READLOG), whether or not an auditd is registered,
 * to any reader with CAP_AUDIT_READ in the initial user namespace whose
 * socket is in the initial network namespace. Each tiered container's
 * watchdog gets such a socket (runtime/watchdog/landlock_records.h reads
 * it). Whether audit is enabled is host-wide state: only kernel_audit_enable
 * changes it, and the runtime calls that only when the operator's
 * agentcage.conf says `kernel-audit = true`. */
#ifndef AGENTCAGE_KERNEL_AUDIT_H
#define AGENTCAGE_KERNEL_AUDIT_H

#include "runtime/util/error.h"

/* Why records cannot reach this process, or NULL when they can be read
 * here: not the initial pid namespace (the records' pids would not be
 * ours) or network namespace (the multicast is sent there only). */
const char *kernel_audit_unreachable(void);

/* A socket on the audit multicast (close-on-exec, non-blocking) whose
 * filter keeps Landlock's records alone, cut to their first 512 bytes; -1
 * with err (EPERM without CAP_AUDIT_READ, EPROTONOSUPPORT without audit). */
int kernel_audit_reader(ac_error_t *err);

/* The kernel's audit_enabled: 0 off, 1 on, 2 on and locked; -1 with err
 * (it takes CAP_AUDIT_CONTROL and the initial pid namespace). */
int kernel_audit_state(ac_error_t *err);

/* Turns audit on (as `auditctl -e 1`). */
int kernel_audit_enable(ac_error_t *err);

#endif
