/* Version, commit and library versions (build_info.h). */
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
/* from pkg-config at build time (the Makefile) */
#ifndef AGENTCAGE_LIBSELINUX_VERSION
#define AGENTCAGE_LIBSELINUX_VERSION "unknown"
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
    libs[3] = (struct build_lib){.name = "libselinux", .annotation = "io.agentcage.libselinux.version"};
    snprintf(libs[3].version, sizeof(libs[3].version), "%s", AGENTCAGE_LIBSELINUX_VERSION);
}
