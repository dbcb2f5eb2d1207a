/* Version, commit and library versions (build_info.h). */
#include <gnu/libc-version.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/capability.h>
#include <yajl/yajl_version.h>

#include "runtime/util/build_info.h"

#ifndef AGENTCAGE_VERSION
#define AGENTCAGE_VERSION "0.0.0"
#endif
#ifndef AGENTCAGE_COMMIT
#define AGENTCAGE_COMMIT "unknown"
#endif

const char *build_version(void)
{
    return AGENTCAGE_VERSION;
}

const char *build_commit(void)
{
    return AGENTCAGE_COMMIT;
}

void build_libs(struct build_lib libs[BUILD_LIB_COUNT])
{
    int y = yajl_version(); /* major * 10000 + minor * 100 + micro */
    libs[0] = (struct build_lib){.name = "yajl", .annotation = "io.agentcage.yajl.version", .loaded = true};
    snprintf(libs[0].version, sizeof(libs[0].version), "%d.%d.%d", y / 10000, y / 100 % 100, y % 100);
    const struct scmp_version *s = seccomp_version();
    libs[1] = (struct build_lib){
        .name = "libseccomp", .annotation = "io.github.seccomp.libseccomp.version", .loaded = true};
    snprintf(libs[1].version, sizeof(libs[1].version), "%u.%u.%u", s ? s->major : 0, s ? s->minor : 0,
             s ? s->micro : 0);
    libs[2] = (struct build_lib){.name = "libcap", .annotation = "io.agentcage.libcap.version"};
#ifdef LIBCAP_MAJOR
    snprintf(libs[2].version, sizeof(libs[2].version), "%d.%d", LIBCAP_MAJOR, LIBCAP_MINOR);
#else
    snprintf(libs[2].version, sizeof(libs[2].version), "unknown");
#endif
    /* linked in (STATIC_LIBC): the glibc this binary was built with, which
     * a glibc update does not change until it is rebuilt */
    libs[3] = (struct build_lib){.name = "glibc", .annotation = "io.agentcage.glibc.version", .loaded = true};
    snprintf(libs[3].version, sizeof(libs[3].version), "%s", gnu_get_libc_version());
}
