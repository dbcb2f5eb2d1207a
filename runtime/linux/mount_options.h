/* Translation of a runtime-spec mount's "options" array into what the
 * kernel wants: mount(2) flags, a propagation change, recursive
 * mount_setattr(2) attributes (the r* options) and the filesystem data
 * string. Pure: no system calls, so it can be unit tested. */
#ifndef AGENTCAGE_MOUNT_OPTIONS_H
#define AGENTCAGE_MOUNT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/util/error.h"

struct mount_opts {
    unsigned long flags;       /* MS_RDONLY, MS_NOSUID, ... to set (never MS_BIND/MS_REC) */
    unsigned long cleared;     /* MS_* flags an option explicitly turned off ("rw", "suid", "atime" ...) */
    unsigned long propagation; /* MS_SHARED/MS_SLAVE/MS_PRIVATE/MS_UNBINDABLE, | MS_REC for r*; 0 = none */
    bool has_rec_attr;         /* some r* option was given: call mount_setattr(AT_RECURSIVE) */
    uint64_t rec_attr_set;     /* MOUNT_ATTR_* for struct mount_attr.attr_set */
    uint64_t rec_attr_clr;     /* MOUNT_ATTR_* for struct mount_attr.attr_clr */
    bool bind;                 /* "bind" or "rbind" */
    bool recursive_bind;       /* "rbind" */
    bool idmap;                /* "idmap" or "ridmap" */
    bool recursive_idmap;      /* "ridmap" */
    bool tmpcopyup;            /* accepted, not implemented (crun extension) */
    char *data;                /* the rest, comma-joined ("mode=755,size=65536k"), or NULL */
};

/* Fill *out from options[0..n). Options later in the array win over earlier
 * ones ("ro","rw" is rw). Anything unknown is filesystem data, as in
 * mount(8). Returns 0, or -1 with *err set. */
int mount_opts_parse(char *const *options, size_t n, struct mount_opts *out, ac_error_t *err);
/* Free what mount_opts_parse allocated. */
void mount_opts_clear(struct mount_opts *opts);
static inline void mount_opts_cleanup(struct mount_opts *opts) { mount_opts_clear(opts); }
#define cleanup_mount_opts __attribute__((cleanup(mount_opts_cleanup)))

/* The MS_* propagation flags of a rootfsPropagation / propagation option
 * name ("rslave" -> MS_SLAVE|MS_REC); 0 when it is not one. */
unsigned long mount_propagation_flags(const char *name);

#endif
