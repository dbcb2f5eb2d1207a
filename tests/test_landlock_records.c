/* Landlock's audit records as the watchdog parses them
 * (runtime/watchdog/landlock_records.h): the kernel's three shapes, taken
 * from this kernel's records, and what must not count: other types, broken
 * prefixes, an object text that tries to look like a domain record. */
#include <string.h>

#include "runtime/watchdog/landlock_records.h"
#include "tests/testlib.h"

static enum ll_record_kind parse(unsigned type, const char *text, struct ll_record *r)
{
    return ll_record_parse(type, text, strlen(text), r);
}

TEST(landlock_access_record)
{
    struct ll_record r;
    const char *t = "audit(1796187694.379:2055): domain=1beca2bb5 blockers=fs.write_file path=\"/proc/3/comm\" "
                    "dev=\"proc\" ino=12701916";
    REQUIRE(parse(AC_AUDIT_LANDLOCK_ACCESS, t, &r) == LL_RECORD_ACCESS);
    CHECK(r.domain == 0x1beca2bb5ull);
    char text[112];
    ll_record_text(&r, text, sizeof(text));
    CHECK_EQ_STR(text, "fs.write_file path=\"/proc/3/comm\" dev=\"proc\" ino=12701916");
    /* cut to the ring's size, NUL-terminated */
    char small[8];
    ll_record_text(&r, small, sizeof(small));
    CHECK_EQ_STR(small, "fs.writ");
}

TEST(landlock_domain_records)
{
    struct ll_record r;
    REQUIRE(parse(AC_AUDIT_LANDLOCK_DOMAIN,
                  "audit(1796187694.379:2055): domain=1beca2bb5 status=allocated mode=enforcing pid=10262 "
                  "uid=2037959168 exe=\"/work/agentcage\" comm=\"agentcage\"",
                  &r) == LL_RECORD_ALLOCATED);
    CHECK(r.domain == 0x1beca2bb5ull);
    CHECK_EQ_INT(r.pid, 10262);
    REQUIRE(parse(AC_AUDIT_LANDLOCK_DOMAIN, "audit(1796187100.927:1799): domain=1bec9ee86 status=deallocated denials=2",
                  &r) == LL_RECORD_DEALLOCATED);
    CHECK(r.domain == 0x1bec9ee86ull);
}

TEST(landlock_records_that_do_not_count)
{
    struct ll_record r;
    const char *access = "audit(1.2:3): domain=1a blockers=fs.make_reg path=\"/x\"";
    /* the same text under another record type */
    CHECK_EQ_INT(parse(1300, access, &r), LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_DOMAIN, access, &r), LL_RECORD_NONE);
    /* broken prefixes, a zero or overlong domain, no blockers */
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_ACCESS, "domain=1a blockers=fs.make_reg", &r), LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_ACCESS, "audit(1.2:3): domain=0 blockers=fs.make_reg", &r), LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_ACCESS, "audit(1.2:3): domain=11112222333344445 blockers=x", &r),
                 LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_ACCESS, "audit(1.2:3): domain=1a", &r), LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_ACCESS, "audit(1.2:3): domain=1a blockers=", &r), LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_ACCESS, "audit(1.2:3): domain=1A blockers=x", &r), LL_RECORD_NONE);
    /* a pid that is no number, none, or too large */
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_DOMAIN, "audit(1.2:3): domain=1a status=allocated mode=enforcing pid=x1", &r),
                 LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_DOMAIN, "audit(1.2:3): domain=1a status=allocated mode=enforcing uid=1", &r),
                 LL_RECORD_NONE);
    CHECK_EQ_INT(parse(AC_AUDIT_LANDLOCK_DOMAIN,
                       "audit(1.2:3): domain=1a status=allocated mode=enforcing pid=2147483648 uid=0", &r),
                 LL_RECORD_NONE);
    /* a NUL ends the text: nothing after it is read */
    const char with_nul[] = "audit(1.2:3): domain=1a\0 blockers=fs.make_reg";
    CHECK_EQ_INT(ll_record_parse(AC_AUDIT_LANDLOCK_ACCESS, with_nul, sizeof(with_nul) - 1, &r), LL_RECORD_NONE);
    /* the length given is the end, wherever the string goes on */
    CHECK_EQ_INT(ll_record_parse(AC_AUDIT_LANDLOCK_ACCESS, access, 20, &r), LL_RECORD_NONE);
}

TEST(landlock_object_text_is_only_copied)
{
    /* a path the container chose: the kernel quotes or hex-encodes it, and
     * whatever it holds stays text; bytes outside printable ASCII become ? */
    struct ll_record r;
    const char t[] = "audit(1.2:3): domain=1a blockers=fs.make_reg path=\"/w\x01 status=allocated pid=1\"";
    REQUIRE(ll_record_parse(AC_AUDIT_LANDLOCK_ACCESS, t, sizeof(t) - 1, &r) == LL_RECORD_ACCESS);
    CHECK(r.domain == 0x1a);
    char text[112];
    ll_record_text(&r, text, sizeof(text));
    CHECK_EQ_STR(text, "fs.make_reg path=\"/w? status=allocated pid=1\"");
}
