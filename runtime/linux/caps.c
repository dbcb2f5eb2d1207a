/* Folder runtime/linux/ (layer 4): the kernel work, one file per isolation
 * dimension (namespaces.c, rootfs.c with mount_options.c, safe_path.c,
 * protect.c, caps.c, seccomp.c, tier_seccomp.c, landlock.c, rootless.c for
 * user namespaces and id maps), the container process (process.c) and the
 * one linear setup of a container's init (init.c), plus what the init uses
 * inside the container: the sync protocol with the runtime (sync.c), OCI
 * hook programs (hooks.c) and the terminal (terminal.c). It calls only
 * runtime/cgroup/, spec/ and runtime/util/. */
/* The container process's user and capability sets. */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/capability.h>

#include "runtime/linux/caps.h"
#include "runtime/util/utils.h"

int caps_known_max(void)
{
    static int known_max = -1;
    if (known_max >= 0)
        return known_max;
    /* libcap found it at its start (a search of the bounding set): no
     * /proc file to read in the container's setup */
    cap_value_t bits = cap_max_bits();
    if (bits > 0 && bits <= 64)
        return known_max = (int) bits - 1;

    cleanup_free char *text = NULL;
    size_t len;
    uint64_t value;
    ac_error_t err = NULL;
    if (read_all_file("/proc/sys/kernel/cap_last_cap", &text, &len, &err) == 0) {
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
            text[--len] = '\0';
        if (parse_uint64(text, &value) == 0 && value < 64)
            known_max = (int) value;
    }
    ac_error_free(&err);
    if (known_max < 0) {
        /* no /proc (e.g. inside the container): ask the bounding set */
        int cap = 0;
        while (cap < 63 && prctl(PR_CAPBSET_READ, cap + 1, 0, 0, 0) >= 0)
            cap++;
        known_max = cap;
    }
    return known_max;
}

static int drop_bounding(uint64_t keep, ac_error_t *err)
{
    int max = caps_known_max();
    for (int cap = 0; cap <= max; cap++) {
        if (keep & (1ULL << cap))
            continue;
        /* dropping one already gone succeeds: one call a capability, the
         * bounding set is read only when the drop is refused */
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 || errno == EINVAL)
            continue; /* (EINVAL: a capability this kernel does not know) */
        int saved = errno;
        if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 0)
            continue; /* not there: nothing to drop */
        return ac_error(err, saved, "drop capability %d from the bounding set", cap);
    }
    return 0;
}

static int set_groups(const struct oci_user *user, ac_error_t *err)
{
    if (user->n_additional_gids > 0) {
        if (setgroups(user->n_additional_gids, (const gid_t *) user->additional_gids) < 0)
            return ac_error(err, errno, "setgroups (%zu additional gids)", user->n_additional_gids);
        return 0;
    }
    /* in a user namespace with setgroups "deny", clearing is refused but
     * there is nothing to clear that we could have set */
    if (setgroups(0, NULL) < 0 && errno != EPERM)
        return ac_error(err, errno, "setgroups (clear)");
    return 0;
}

/* Permitted, effective and inheritable exactly as the spec has them. */
static int set_process_caps(const struct oci_capabilities *caps, ac_error_t *err)
{
    cap_t c = cap_init(); /* all clear */
    if (c == NULL)
        return ac_error(err, errno, "cap_init");
    int max = caps_known_max();
    for (int cap = 0; cap <= max; cap++) {
        cap_value_t v = cap;
        uint64_t bit = 1ULL << cap;
        if ((caps->permitted & bit) && cap_set_flag(c, CAP_PERMITTED, 1, &v, CAP_SET) < 0)
            goto fail;
        if ((caps->effective & bit) && cap_set_flag(c, CAP_EFFECTIVE, 1, &v, CAP_SET) < 0)
            goto fail;
        if ((caps->inheritable & bit) && cap_set_flag(c, CAP_INHERITABLE, 1, &v, CAP_SET) < 0)
            goto fail;
    }
    if (cap_set_proc(c) < 0)
        goto fail;
    cap_free(c);
    return 0;
fail:;
    int saved = errno;
    cap_free(c);
    return ac_error(err, saved, "set capabilities (permitted %#llx, effective %#llx, inheritable %#llx)",
                    (unsigned long long) caps->permitted, (unsigned long long) caps->effective,
                    (unsigned long long) caps->inheritable);
}

static int set_ambient(uint64_t ambient, ac_error_t *err)
{
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return ac_error(err, errno, "clear the ambient capabilities");
    int max = caps_known_max();
    for (int cap = 0; cap <= max; cap++) {
        if (!(ambient & (1ULL << cap)))
            continue;
        /* a cap missing from permitted or inheritable cannot be ambient;
         * runc warns and goes on, and so do we */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0) {
            int saved = errno;
            ac_debug("cannot raise ambient capability %d: %s", cap, strerror(saved));
        }
    }
    return 0;
}

int caps_apply_user_and_capabilities(const struct oci_process *process, ac_error_t *err)
{
    static const struct oci_capabilities no_caps;
    const struct oci_capabilities *caps = process->has_capabilities ? &process->capabilities : &no_caps;
    const struct oci_user *user = &process->user;

    /* keep the permitted set across the change from uid 0 */
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        return ac_error(err, errno, "prctl(PR_SET_KEEPCAPS)");
    if (drop_bounding(caps->bounding, err) < 0)
        return -1;
    if (set_groups(user, err) < 0)
        return -1;
    if (setresgid(user->gid, user->gid, user->gid) < 0)
        return ac_error(err, errno, "setresgid %u", user->gid);
    if (setresuid(user->uid, user->uid, user->uid) < 0)
        return ac_error(err, errno, "setresuid %u", user->uid);
    if (set_process_caps(caps, err) < 0)
        return -1;
    if (set_ambient(caps->ambient, err) < 0)
        return -1;
    if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
        return ac_error(err, errno, "prctl(PR_SET_KEEPCAPS)");
    umask(user->has_umask ? user->umask : 0022);
    return 0;
}
