/* Timestamps as the state and the log write them: RFC 3339 in UTC with
 * nanoseconds. Below error.c, which stamps its JSON log lines with it. */
#include <stdio.h>
#include <time.h>

#include "runtime/util/utils.h"

void rfc3339_format(char buf[RFC3339_LEN])
{
    struct timespec ts;
    struct tm tm;
    char day[40];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, RFC3339_LEN, "%s.%09ldZ", day, ts.tv_nsec);
}

char *rfc3339_now(void)
{
    char buf[RFC3339_LEN];
    rfc3339_format(buf);
    return xstrdup(buf);
}
