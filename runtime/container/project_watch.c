/* Files of a writable project that tools run without asking (Makefile,
 * package.json, setup.py, a workflow, an executable script at the top ...):
 * what a tiered container did to them is recorded in the audit trail, so
 * a reviewer sees it before running the project.
 *
 * At create the runtime notes size, mtime and inode of each such file
 * below each writable project mount (io.agentcage.protect-roots) in the
 * state directory; at delete it looks again and records every file
 * created, changed or removed ("project-file" events). The scan is shallow
 * and bounded: the top of the project and the few folders where these
 * files live. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hooks/audit.h"
#include "runtime/container/container.h"
#include "runtime/util/utils.h"

#define MAX_WATCHED 4096

/* Relative to the project: a name at the top, or "dir/" + pattern. */
static const char *const watched[] = {
    "Makefile", "GNUmakefile", "makefile", "package.json", "pyproject.toml", "setup.py", "setup.cfg", "tox.ini",
    "noxfile.py", "conftest.py", "Dockerfile", "docker-compose.yml", "docker-compose.yaml", "compose.yaml",
    "justfile", "Rakefile", "Gemfile", "build.gradle", "pom.xml", "Cargo.toml", "build.rs", "CMakeLists.txt",
    ".envrc", ".pre-commit-config.yaml", ".github/workflows/*", ".vscode/tasks.json", ".vscode/settings.json",
    ".devcontainer/*", ".husky/*", ".git/hooks/*", ".git/config",
};

struct entry {
    char *path; /* host path */
    long long size, mtime_ns, ino;
};

static void add(struct entry **list, size_t *n, const char *path, const struct stat *st)
{
    if (*n >= MAX_WATCHED)
        return;
    *list = xrealloc(*list, (*n + 1) * sizeof(**list));
    (*list)[*n] = (struct entry){xstrdup(path), (long long)st->st_size,
                                 (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec,
                                 (long long)st->st_ino};
    (*n)++;
}

/* Every watched file below root (a host folder) into list. */
static void scan(const char *root, struct entry **list, size_t *n)
{
    struct stat st;
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++) {
        const char *slash = strrchr(watched[i], '/');
        if (slash == NULL) {
            cleanup_free char *p = xasprintf("%s/%s", root, watched[i]);
            if (lstat(p, &st) == 0 && S_ISREG(st.st_mode))
                add(list, n, p, &st);
            continue;
        }
        cleanup_free char *dir = xasprintf("%s/%.*s", root, (int)(slash - watched[i]), watched[i]);
        DIR *d = opendir(dir);
        for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
            if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                continue;
            cleanup_free char *p = xasprintf("%s/%s", dir, de->d_name);
            if (fnmatch(slash + 1, de->d_name, 0) == 0 && lstat(p, &st) == 0 && S_ISREG(st.st_mode))
                add(list, n, p, &st);
        }
        if (d)
            closedir(d);
    }
    /* executable scripts at the top */
    DIR *d = opendir(root);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        cleanup_free char *p = xasprintf("%s/%s", root, de->d_name);
        if (fnmatch("*.sh", de->d_name, 0) == 0 && lstat(p, &st) == 0 && S_ISREG(st.st_mode) &&
            (st.st_mode & 0111))
            add(list, n, p, &st);
    }
    if (d)
        closedir(d);
}

/* The host folders of the writable project mounts: protect-roots names
 * their destinations ("DEST" or "DEST=home"). */
static size_t project_roots(const struct oci_spec *spec, char ***out)
{
    const char *roots = spec_annotation(spec, "io.agentcage.protect-roots");
    cleanup_free char *copy = roots ? xstrdup(roots) : NULL;
    char *save = NULL;
    size_t n = 0;
    *out = NULL;
    for (char *dest = copy ? strtok_r(copy, ":", &save) : NULL; dest; dest = strtok_r(NULL, ":", &save)) {
        char *mark = strchr(dest, '=');
        if (mark)
            *mark = '\0';
        for (size_t i = 0; i < spec->n_mounts; i++)
            if (spec->mounts[i].destination && strcmp(spec->mounts[i].destination, dest) == 0 &&
                spec->mounts[i].source && spec->mounts[i].source[0] == '/') {
                *out = xrealloc(*out, (n + 1) * sizeof(char *));
                (*out)[n++] = xstrdup(spec->mounts[i].source);
            }
    }
    return n;
}

static void free_entries(struct entry *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(list[i].path);
    free(list);
}

int project_watch_start(const char *state_dir, const struct oci_spec *spec, ac_error_t *err)
{
    char **roots;
    size_t nr = project_roots(spec, &roots);
    if (nr == 0)
        return 0;
    cleanup_free char *path = xasprintf("%s/project-files", state_dir);
    cleanup_file FILE *f = fopen(path, "wex");
    int ret = f ? 0 : ac_error(err, errno, "write `%s`", path);
    for (size_t r = 0; r < nr; r++) {
        struct entry *list = NULL;
        size_t n = 0;
        if (f) {
            scan(roots[r], &list, &n);
            fprintf(f, "R %s\n", roots[r]);
            for (size_t i = 0; i < n; i++)
                fprintf(f, "F %lld %lld %lld %s\n", list[i].size, list[i].mtime_ns, list[i].ino, list[i].path);
        }
        free_entries(list, n);
        free(roots[r]);
    }
    free(roots);
    return ret;
}

static void record(const struct global_opts *g, const char *id, const char *path, const char *change)
{
    cleanup_free char *jpath = audit_json_string(path);
    cleanup_free char *members = xasprintf("\"path\":%s,\"change\":\"%s\"", jpath, change);
    container_audit(g, "project-file", id, members);
}

void project_watch_finish(const struct global_opts *g, const char *state_dir, const char *id)
{
    cleanup_free char *path = xasprintf("%s/project-files", state_dir);
    cleanup_file FILE *f = fopen(path, "re");
    if (f == NULL)
        return; /* a plain container, or one without a writable project */
    struct entry *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        long long size, mtime, ino;
        int off = 0;
        if (strncmp(line, "R ", 2) == 0) {
            scan(line + 2, &after, &na);
        } else if (sscanf(line, "F %lld %lld %lld %n", &size, &mtime, &ino, &off) == 3 && off > 0 &&
                   nb < MAX_WATCHED) {
            before = xrealloc(before, (nb + 1) * sizeof(*before));
            before[nb++] = (struct entry){xstrdup(line + off), size, mtime, ino};
        }
    }
    free(line);
    for (size_t i = 0; i < na; i++) {
        size_t j = 0;
        while (j < nb && strcmp(before[j].path, after[i].path) != 0)
            j++;
        if (j == nb)
            record(g, id, after[i].path, "created");
        else if (before[j].size != after[i].size || before[j].mtime_ns != after[i].mtime_ns ||
                 before[j].ino != after[i].ino)
            record(g, id, after[i].path, "modified");
    }
    for (size_t j = 0; j < nb; j++) {
        size_t i = 0;
        while (i < na && strcmp(before[j].path, after[i].path) != 0)
            i++;
        if (i == na)
            record(g, id, before[j].path, "removed");
    }
    free_entries(before, nb);
    free_entries(after, na);
}
