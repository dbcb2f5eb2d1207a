/* Timestamps as the state and the log write them: RFC 3339 in UTC with
 * nanoseconds. Below error.c, which stamps its JSON log lines with it.
 * The date is computed here, not by gmtime_r: glibc's loads the time zone
 * (/etc/localtime: an open, two fstats, two reads) on its first call, for
 * a UTC time that needs none. */
#include <stdio.h>
#include <time.h>

#include "runtime/util/utils.h"

void utc_date_time(time_t t, char out[UTC_DATE_TIME_LEN])
{
    /* the civil date of a day count from 1970-01-01, by 400-year eras of
     * 146097 days that start on March 1st (the leap day last) */
    long long days = t >= 0 ? t / 86400 : (t - 86399) / 86400, secs = t - days * 86400;
    long long z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;                                 /* [0, 146096] */
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);          /* [0, 365] */
    long long mp = (5 * doy + 2) / 153;                               /* [0, 11], March = 0 */
    long long day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    long long year = yoe + era * 400 + (month <= 2);
    snprintf(out, UTC_DATE_TIME_LEN, "%04d-%02d-%02dT%02d:%02d:%02d", (int)year, (int)month, (int)day,
             (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
}

void rfc3339_format(char buf[RFC3339_LEN])
{
    struct timespec ts;
    char day[UTC_DATE_TIME_LEN];
    clock_gettime(CLOCK_REALTIME, &ts);
    utc_date_time(ts.tv_sec, day);
    snprintf(buf, RFC3339_LEN, "%.19s.%09ldZ", day, ts.tv_nsec);
}

char *rfc3339_now(void)
{
    char buf[RFC3339_LEN];
    rfc3339_format(buf);
    return xstrdup(buf);
}
