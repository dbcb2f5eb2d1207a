/* The mapping's context: the decision log, refusals, and the Landlock and
 * protection lists that every piece of the mapping adds to. The pieces
 * (tier_*.c) call these; this file calls none of them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/util/utils.h"
#include "tier-annotations/tier_internal.h"

void tier_decisions_free(struct tier_decisions *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->lines[i]);
    free(d->lines);
    d->lines = NULL;
    d->n = 0;
}

void tier_decide(struct tier_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = xvasprintf(fmt, ap);
    va_end(ap);
    if (line == NULL)
        return;
    c->d->lines = xrealloc(c->d->lines, (c->d->n + 1) * sizeof(*c->d->lines));
    c->d->lines[c->d->n++] = line;
}

/* "tier N<joiner><what>": one decision line "refused: ...", and *err
 * when it is the first. Returns -1. */
static int record_refusal(struct tier_ctx *c, ac_error_t *err, const char *joiner, const char *fmt, va_list ap)
{
    char *what = xvasprintf(fmt, ap);
    char *line = xasprintf("tier %d%s%s", c->tier, joiner, what);
    c->refused++;
    tier_decide(c, "refused: %s", line);
    ac_error(err, 0, "%s", line);
    free(line);
    free(what);
    return -1;
}

int tier_refuse(struct tier_ctx *c, ac_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_refusal(c, err, " forbids ", fmt, ap);
    va_end(ap);
    return -1;
}

int tier_reject(struct tier_ctx *c, ac_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_refusal(c, err, ": ", fmt, ap);
    va_end(ap);
    return -1;
}

void tier_landlock_add(struct tier_ctx *c, const char *path)
{
    if (strchr(path, ':')) {
        /* the list is colon-separated: such a path stays unwritable */
        tier_decide(c, "landlock: %s has a `:` and stays read-only under Landlock", path);
        return;
    }
    if (list_has(c->landlock_rw, ':', path))
        return; /* each entry once */
    char *joined = c->landlock_rw ? xasprintf("%s:%s", c->landlock_rw, path) : xstrdup(path);
    free(c->landlock_rw);
    c->landlock_rw = joined;
}

void tier_protect_add(struct tier_ctx *c, const char *dest, bool home)
{
    if (strchr(dest, ':') || strchr(dest, '='))
        return; /* cannot be listed; Landlock keeps it read-only anyway */
    char *entry = xasprintf("%s%s", dest, home ? "=home" : "");
    char *joined = c->protect_roots ? xasprintf("%s:%s", c->protect_roots, entry) : xstrdup(entry);
    free(entry);
    free(c->protect_roots);
    c->protect_roots = joined;
}

void tier_home_add(struct tier_ctx *c, const char *dest)
{
    if (strchr(dest, ':'))
        return; /* cannot be listed; such a mount is refused nowhere else, so say so */
    char *joined = c->home_roots ? xasprintf("%s:%s", c->home_roots, dest) : xstrdup(dest);
    free(c->home_roots);
    c->home_roots = joined;
}

void tier_capped_add(struct tier_ctx *c, const char *dest)
{
    if (strchr(dest, ':'))
        return;
    char *joined = c->capped_binds ? xasprintf("%s:%s", c->capped_binds, dest) : xstrdup(dest);
    free(c->capped_binds);
    c->capped_binds = joined;
}
