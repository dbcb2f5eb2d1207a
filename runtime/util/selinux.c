/* libselinux on demand (see selinux.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include "runtime/util/selinux.h"

static void *libselinux;
static int (*is_enabled)(void);
static int (*set_exec_context)(const char *);

int ac_selinux_load(ac_error_t *err)
{
    if (libselinux)
        return 0;
    void *h = dlopen("libselinux.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        return ac_error(err, 0, "SELinux: cannot load libselinux.so.1: %s", dlerror());
    is_enabled = (int (*)(void))dlsym(h, "is_selinux_enabled");
    set_exec_context = (int (*)(const char *))dlsym(h, "setexeccon");
    if (is_enabled == NULL || set_exec_context == NULL) {
        dlclose(h);
        return ac_error(err, 0, "SELinux: libselinux.so.1 lacks is_selinux_enabled or setexeccon");
    }
    libselinux = h;
    return 0;
}

int ac_selinux_enabled(void)
{
    return libselinux ? is_enabled() : -1;
}

int ac_selinux_setexeccon(const char *label)
{
    if (libselinux == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return set_exec_context(label);
}
