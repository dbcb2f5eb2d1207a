/* Table-driven translation of mount options (see mount_options.h). */
#include <string.h>
#include <sys/mount.h>

#include "runtime/linux/mount_options.h"
#include "runtime/util/utils.h"

enum opt_kind {
    OPT_SET,      /* set an MS_* flag */
    OPT_CLEAR,    /* clear an MS_* flag */
    OPT_PROPAGATION,
    OPT_REC_SET,  /* recursive MOUNT_ATTR_* to set */
    OPT_REC_CLR,  /* recursive MOUNT_ATTR_* to clear */
    OPT_REC_ATIME, /* recursive atime mode: value is MOUNT_ATTR_{RELATIME,NOATIME,STRICTATIME} */
    OPT_BIND,
    OPT_RBIND,
    OPT_IDMAP,
    OPT_RIDMAP,
    OPT_TMPCOPYUP,
    OPT_IGNORE,
};

struct opt_entry {
    const char *name;
    enum opt_kind kind;
    unsigned long value;
};

static const struct opt_entry opt_table[] = {
    { "defaults", OPT_IGNORE, 0 },
    { "ro", OPT_SET, MS_RDONLY },
    { "rw", OPT_CLEAR, MS_RDONLY },
    { "nosuid", OPT_SET, MS_NOSUID },
    { "suid", OPT_CLEAR, MS_NOSUID },
    { "nodev", OPT_SET, MS_NODEV },
    { "dev", OPT_CLEAR, MS_NODEV },
    { "noexec", OPT_SET, MS_NOEXEC },
    { "exec", OPT_CLEAR, MS_NOEXEC },
    { "sync", OPT_SET, MS_SYNCHRONOUS },
    { "async", OPT_CLEAR, MS_SYNCHRONOUS },
    { "dirsync", OPT_SET, MS_DIRSYNC },
    { "remount", OPT_SET, MS_REMOUNT },
    { "mand", OPT_SET, MS_MANDLOCK },
    { "nomand", OPT_CLEAR, MS_MANDLOCK },
    { "noatime", OPT_SET, MS_NOATIME },
    { "atime", OPT_CLEAR, MS_NOATIME },
    { "nodiratime", OPT_SET, MS_NODIRATIME },
    { "diratime", OPT_CLEAR, MS_NODIRATIME },
    { "relatime", OPT_SET, MS_RELATIME },
    { "norelatime", OPT_CLEAR, MS_RELATIME },
    { "strictatime", OPT_SET, MS_STRICTATIME },
    { "nostrictatime", OPT_CLEAR, MS_STRICTATIME },
    { "lazytime", OPT_SET, MS_LAZYTIME },
    { "nolazytime", OPT_CLEAR, MS_LAZYTIME },
    { "iversion", OPT_SET, MS_I_VERSION },
    { "noiversion", OPT_CLEAR, MS_I_VERSION },
    { "silent", OPT_SET, MS_SILENT },
    { "loud", OPT_CLEAR, MS_SILENT },
    { "nosymfollow", OPT_SET, MS_NOSYMFOLLOW },
    { "symfollow", OPT_CLEAR, MS_NOSYMFOLLOW },

    { "private", OPT_PROPAGATION, MS_PRIVATE },
    { "rprivate", OPT_PROPAGATION, MS_PRIVATE | MS_REC },
    { "shared", OPT_PROPAGATION, MS_SHARED },
    { "rshared", OPT_PROPAGATION, MS_SHARED | MS_REC },
    { "slave", OPT_PROPAGATION, MS_SLAVE },
    { "rslave", OPT_PROPAGATION, MS_SLAVE | MS_REC },
    { "unbindable", OPT_PROPAGATION, MS_UNBINDABLE },
    { "runbindable", OPT_PROPAGATION, MS_UNBINDABLE | MS_REC },

    { "rro", OPT_REC_SET, MOUNT_ATTR_RDONLY },
    { "rrw", OPT_REC_CLR, MOUNT_ATTR_RDONLY },
    { "rnosuid", OPT_REC_SET, MOUNT_ATTR_NOSUID },
    { "rsuid", OPT_REC_CLR, MOUNT_ATTR_NOSUID },
    { "rnodev", OPT_REC_SET, MOUNT_ATTR_NODEV },
    { "rdev", OPT_REC_CLR, MOUNT_ATTR_NODEV },
    { "rnoexec", OPT_REC_SET, MOUNT_ATTR_NOEXEC },
    { "rexec", OPT_REC_CLR, MOUNT_ATTR_NOEXEC },
    { "rnodiratime", OPT_REC_SET, MOUNT_ATTR_NODIRATIME },
    { "rdiratime", OPT_REC_CLR, MOUNT_ATTR_NODIRATIME },
    { "rnosymfollow", OPT_REC_SET, MOUNT_ATTR_NOSYMFOLLOW },
    { "rsymfollow", OPT_REC_CLR, MOUNT_ATTR_NOSYMFOLLOW },
    /* The atime settings are one enum in mount_setattr(2), not bits: the
     * "clearing" forms pick the mode the kernel uses when nothing is said
     * (relatime), or strictatime for "norelatime". */
    { "rnoatime", OPT_REC_ATIME, MOUNT_ATTR_NOATIME },
    { "ratime", OPT_REC_ATIME, MOUNT_ATTR_RELATIME },
    { "rrelatime", OPT_REC_ATIME, MOUNT_ATTR_RELATIME },
    { "rnorelatime", OPT_REC_ATIME, MOUNT_ATTR_STRICTATIME },
    { "rstrictatime", OPT_REC_ATIME, MOUNT_ATTR_STRICTATIME },
    { "rnostrictatime", OPT_REC_ATIME, MOUNT_ATTR_RELATIME },

    { "bind", OPT_BIND, 0 },
    { "rbind", OPT_RBIND, 0 },
    { "idmap", OPT_IDMAP, 0 },
    { "ridmap", OPT_RIDMAP, 0 },
    { "tmpcopyup", OPT_TMPCOPYUP, 0 },
};

static const struct opt_entry *opt_lookup(const char *name)
{
    for (size_t i = 0; i < sizeof(opt_table) / sizeof(opt_table[0]); i++)
        if (strcmp(opt_table[i].name, name) == 0)
            return &opt_table[i];
    return NULL;
}

unsigned long mount_propagation_flags(const char *name)
{
    const struct opt_entry *e = name ? opt_lookup(name) : NULL;
    return e && e->kind == OPT_PROPAGATION ? e->value : 0;
}

static void data_append(char **data, const char *opt)
{
    if (*data == NULL) {
        *data = xstrdup(opt);
        return;
    }
    char *joined = xasprintf("%s,%s", *data, opt);
    free(*data);
    *data = joined;
}

int mount_opts_parse(char *const *options, size_t n, struct mount_opts *out, ac_error_t *err)
{
    memset(out, 0, sizeof(*out));
    int rec_atime = -1; /* MOUNT_ATTR_* atime mode, -1 = not given */

    for (size_t i = 0; i < n; i++) {
        const char *name = options[i];
        if (name == NULL || *name == '\0')
            continue;
        const struct opt_entry *e = opt_lookup(name);
        if (e == NULL) {
            data_append(&out->data, name);
            continue;
        }
        switch (e->kind) {
        case OPT_SET:
            out->flags |= e->value;
            out->cleared &= ~e->value;
            break;
        case OPT_CLEAR:
            out->flags &= ~e->value;
            out->cleared |= e->value;
            break;
        case OPT_PROPAGATION:
            out->propagation = e->value;
            break;
        case OPT_REC_SET:
            out->has_rec_attr = true;
            out->rec_attr_set |= e->value;
            out->rec_attr_clr &= ~(uint64_t)e->value;
            break;
        case OPT_REC_CLR:
            out->has_rec_attr = true;
            out->rec_attr_clr |= e->value;
            out->rec_attr_set &= ~(uint64_t)e->value;
            break;
        case OPT_REC_ATIME:
            out->has_rec_attr = true;
            rec_atime = (int)e->value;
            break;
        case OPT_BIND:
            out->bind = true;
            break;
        case OPT_RBIND:
            out->bind = true;
            out->recursive_bind = true;
            break;
        case OPT_IDMAP:
            out->idmap = true;
            break;
        case OPT_RIDMAP:
            out->idmap = true;
            out->recursive_idmap = true;
            break;
        case OPT_TMPCOPYUP:
            out->tmpcopyup = true;
            break;
        case OPT_IGNORE:
            break;
        }
    }
    if (rec_atime >= 0) {
        /* mount_setattr(2): changing the atime mode needs the whole
         * MOUNT_ATTR__ATIME mask in attr_clr and the new mode in attr_set. */
        out->rec_attr_clr |= MOUNT_ATTR__ATIME;
        out->rec_attr_set = (out->rec_attr_set & ~(uint64_t)MOUNT_ATTR__ATIME) | (uint64_t)rec_atime;
    }
    (void)err;
    return 0;
}

void mount_opts_clear(struct mount_opts *opts)
{
    free(opts->data);
    opts->data = NULL;
}
