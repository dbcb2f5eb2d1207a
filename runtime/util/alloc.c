/* Folder runtime/util/ (layer 1): allocation (alloc.c), timestamps
 * (clock.c), errors and the log (error.c), file and number helpers
 * (utils.c). It calls nothing of ours above it. */
/* Allocation that cannot fail softly, and the raw write loop: the bottom
 * of the runtime. Nothing here reports through an ac_error_t (error.c is
 * built on top of these), so it depends on nothing of ours. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/util/utils.h"

static void oom(void)
{
    static const char msg[] = "agentcage: out of memory\n";
    if (write(2, msg, sizeof(msg) - 1) < 0) {
        /* nothing to do */
    }
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        oom();
    return p;
}

void *xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (p == NULL)
        oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (p == NULL)
        oom();
    return p;
}

char *xstrdup(const char *s)
{
    char *r = strdup(s ? s : "");
    if (r == NULL)
        oom();
    return r;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    char *r = NULL;
    if (vasprintf(&r, fmt, ap) < 0)
        oom();
    return r;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = xvasprintf(fmt, ap);
    va_end(ap);
    return r;
}

ssize_t write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    return (ssize_t)len;
}
