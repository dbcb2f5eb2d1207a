/* Sizes, durations, CPU counts and tier names as operators and annotations
 * write them. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tier-annotations/tier_internal.h"

const char *const tier_names[TIER_COUNT] = {"read", "write", "network", "irreversible"};

int tier_parse_name(const char *s)
{
    if (s == NULL)
        return -1;
    for (int t = 0; t < TIER_COUNT; t++) {
        char digit[2] = {(char)('0' + t), '\0'};
        if (strcmp(s, digit) == 0 || strcasecmp(s, tier_names[t]) == 0)
            return t;
    }
    return -1;
}

/* Leading decimal digits, overflow-checked; *end after them. */
static int parse_digits(const char *s, int64_t *out, const char **end)
{
    int64_t n = 0;
    const char *p = s;
    if (!isdigit((unsigned char)*p))
        return -1;
    for (; isdigit((unsigned char)*p); p++) {
        if (n > (INT64_MAX - 9) / 10)
            return -1;
        n = n * 10 + (*p - '0');
    }
    *out = n;
    *end = p;
    return 0;
}

static int mul_checked(int64_t n, int64_t m, int64_t *out)
{
    if (n != 0 && m > INT64_MAX / n)
        return -1;
    *out = n * m;
    return 0;
}

int tier_parse_size(const char *s, int64_t *out)
{
    int64_t n;
    const char *p;
    if (s == NULL || parse_digits(s, &n, &p) < 0)
        return -1;
    int64_t mult = 1;
    switch (tolower((unsigned char)*p)) {
    case '\0': return (*out = n, 0);
    case 'b': mult = 1; break;
    case 'k': mult = INT64_C(1) << 10; break;
    case 'm': mult = INT64_C(1) << 20; break;
    case 'g': mult = INT64_C(1) << 30; break;
    case 't': mult = INT64_C(1) << 40; break;
    default: return -1;
    }
    p++;
    /* "m", "mb", "mi", "mib" all mean MiB: limits are never decimal here */
    if (mult > 1 && tolower((unsigned char)*p) == 'i')
        p++;
    if (mult > 1 && tolower((unsigned char)*p) == 'b')
        p++;
    if (*p != '\0')
        return -1;
    return mul_checked(n, mult, out);
}

int tier_parse_duration(const char *s, int64_t *out)
{
    int64_t n;
    const char *p;
    if (s == NULL || parse_digits(s, &n, &p) < 0)
        return -1;
    int64_t mult;
    if (*p == '\0' || strcmp(p, "s") == 0)
        mult = 1000;
    else if (strcmp(p, "ms") == 0)
        mult = 1;
    else if (strcmp(p, "m") == 0 || strcmp(p, "min") == 0)
        mult = 60 * 1000;
    else if (strcmp(p, "h") == 0)
        mult = 3600 * 1000;
    else
        return -1;
    return mul_checked(n, mult, out);
}

int tier_parse_cpus(const char *s, int64_t *out)
{
    int64_t whole, frac = 0;
    const char *p;
    if (s == NULL || parse_digits(s, &whole, &p) < 0 || whole > 1000000)
        return -1;
    if (*p == '.') {
        int digits = 0;
        for (p++; isdigit((unsigned char)*p); p++, digits++) {
            if (digits >= 3)
                return -1; /* finer than a thousandth of a CPU means nothing to CFS */
            frac = frac * 10 + (*p - '0');
        }
        if (digits == 0)
            return -1;
        for (; digits < 3; digits++)
            frac *= 10;
    }
    if (*p != '\0')
        return -1;
    *out = whole * 1000 + frac;
    return 0;
}

const char *tier_format_size(int64_t bytes, char *buf, size_t len)
{
    static const char units[] = "tgmk";
    for (int i = 0; units[i]; i++) {
        int64_t m = INT64_C(1) << (10 * (4 - i));
        if (bytes >= m && bytes % m == 0) {
            snprintf(buf, len, "%lld%c", (long long)(bytes / m), units[i]);
            return buf;
        }
    }
    snprintf(buf, len, "%lld", (long long)bytes);
    return buf;
}

const char *tier_format_duration(int64_t ms, char *buf, size_t len)
{
    if (ms % 3600000 == 0 && ms > 0)
        snprintf(buf, len, "%lldh", (long long)(ms / 3600000));
    else if (ms % 60000 == 0 && ms > 0)
        snprintf(buf, len, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0)
        snprintf(buf, len, "%llds", (long long)(ms / 1000));
    else
        snprintf(buf, len, "%lldms", (long long)ms);
    return buf;
}

const char *tier_format_cpus(int64_t milli, char *buf, size_t len)
{
    if (milli % 1000 == 0)
        snprintf(buf, len, "%lld", (long long)(milli / 1000));
    else {
        snprintf(buf, len, "%lld.%03lld", (long long)(milli / 1000), (long long)(milli % 1000));
        /* 1.500 -> 1.5 */
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '0')
            buf[--n] = '\0';
    }
    return buf;
}
