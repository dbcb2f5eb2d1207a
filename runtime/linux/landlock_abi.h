/* Landlock's user-space ABI up to version 7, for installed kernel headers
 * that may be older than the running kernel: the access rights and scopes
 * each version added, and the argument structures in their newest layout
 * (the kernel takes any prefix of them, given its size). Macros and types
 * only, so the libc-free watchdog can use it too. */
#ifndef AGENTCAGE_LANDLOCK_ABI_H
#define AGENTCAGE_LANDLOCK_ABI_H

#include <linux/landlock.h>
#include <linux/types.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)     /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif

/* ABI 4: TCP bind and connect by port */
#define AC_LANDLOCK_RULE_NET_PORT 2
#define AC_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define AC_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
/* ABI 6: no abstract unix sockets or signals out of the domain */
#define AC_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define AC_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)

/* ABI 7: which refusals the kernel reports to its audit subsystem (only
 * while audit is enabled). By default those of the process that made the
 * domain until it calls execve, none after. */
#define AC_LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0)
#define AC_LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
/* The audit records (linux/audit.h of Linux 6.15): a refusal, naming its
 * domain; a domain, once before its first refusal (with the pid that made
 * it) and once when it is freed. */
#define AC_AUDIT_LANDLOCK_ACCESS 1423
#define AC_AUDIT_LANDLOCK_DOMAIN 1424

struct ac_landlock_ruleset_attr {
    __u64 handled_access_fs;
    __u64 handled_access_net; /* ABI 4 */
    __u64 scoped;             /* ABI 6 */
};
/* the size to pass for an ABI: the kernel refuses fields it does not know */
#define AC_LANDLOCK_RULESET_SIZE(abi) ((abi) >= 6 ? 24 : (abi) >= 4 ? 16 : 8)

struct ac_landlock_net_port_attr {
    __u64 allowed_access;
    __u64 port;
} __attribute__((packed));

#define AC_LANDLOCK_FS_WRITE_V1                                                                               \
    (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |         \
     LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                \
     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |             \
     LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Every filesystem write right of an ABI. */
#define AC_LANDLOCK_FS_WRITE(abi)                                                                             \
    (AC_LANDLOCK_FS_WRITE_V1 | ((abi) >= 2 ? LANDLOCK_ACCESS_FS_REFER : 0) |                                  \
     ((abi) >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0) | ((abi) >= 5 ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0))
/* Every filesystem right of an ABI: writing, reading and executing. */
#define AC_LANDLOCK_FS_ALL(abi)                                                                               \
    (AC_LANDLOCK_FS_WRITE(abi) | LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |                  \
     LANDLOCK_ACCESS_FS_READ_DIR)
/* The rights that make sense on a file (a rule on a non-directory takes no
 * others). */
#define AC_LANDLOCK_FS_FILE                                                                                   \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |              \
     LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

#endif
