/* What this build is: its version, commit and the libraries it uses, for
 * --version, features and check. */
#ifndef AGENTCAGE_BUILD_INFO_H
#define AGENTCAGE_BUILD_INFO_H

#include <stdbool.h>

struct build_lib {
    const char *name;       /* "yajl", "libseccomp", "libcap", "glibc" */
    const char *annotation; /* its key in the features document */
    char version[32];       /* "2.1.0" */
    bool loaded;            /* the library in use now (else: the one built against) */
};
#define BUILD_LIB_COUNT 4

const char *build_version(void);
const char *build_commit(void);
/* yajl, libseccomp and glibc say which version is in use (the one linked
 * in, for a static build); libcap has no such call, so its is the version
 * this binary was built with. */
void build_libs(struct build_lib libs[BUILD_LIB_COUNT]);

#endif
