/* A tiny header-only unit-test framework.
 *
 *     #include "tests/testlib.h"
 *     TEST(parses_empty) { CHECK_EQ_INT(1 + 1, 2); }
 *
 * Each TEST registers itself (a constructor) and the main() defined here runs
 * them in order, printing "ok - name" or "FAIL - name: reason" per test and
 * "N passed, M failed" at the end; the exit status is 1 if any failed.
 * CHECK* record a failure and go on; REQUIRE* also end the test (use them
 * before dereferencing what they check). An argument to the binary runs only
 * the tests whose names contain it. Define TESTLIB_NO_MAIN to bring your own. */
#ifndef AGENTCAGE_TESTLIB_H
#define AGENTCAGE_TESTLIB_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TESTLIB_MAX_TESTS 1024

struct testlib_case {
    const char *name;
    void (*fn)(void);
};

static struct testlib_case testlib_cases[TESTLIB_MAX_TESTS];
static int testlib_n_cases;
static int testlib_current_failed; /* failures in the running test */
static char testlib_first_reason[1024];

static inline void testlib_register(const char *name, void (*fn)(void))
{
    if (testlib_n_cases >= TESTLIB_MAX_TESTS) {
        fprintf(stderr, "testlib: too many tests (raise TESTLIB_MAX_TESTS)\n");
        exit(2);
    }
    testlib_cases[testlib_n_cases].name = name;
    testlib_cases[testlib_n_cases].fn = fn;
    testlib_n_cases++;
}

/* Record a failure at file:line. The first one becomes the test's reason,
 * later ones are printed as "#" diagnostics. */
__attribute__((format(printf, 3, 4))) static inline void testlib_fail(const char *file, int line,
                                                                      const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (testlib_current_failed++ == 0)
        snprintf(testlib_first_reason, sizeof(testlib_first_reason), "%s:%d: %s", file, line, msg);
    else
        printf("#   also %s:%d: %s\n", file, line, msg);
}

#define TEST(name)                                                                      \
    static void test_##name(void);                                                      \
    __attribute__((constructor)) static void testlib_register_##name(void)             \
    {                                                                                   \
        testlib_register(#name, test_##name);                                           \
    }                                                                                   \
    static void test_##name(void)

#define TESTLIB_STR_OR_NULL(s) ((s) ? (s) : "(null)")

/* The _IMPL macros evaluate to true when the check passed. */
#define CHECK_IMPL(cond) ((cond) ? 1 : (testlib_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond), 0))

#define CHECK_EQ_INT_IMPL(actual, expected)                                                            \
    ({                                                                                                 \
        long long a_ = (long long)(actual), e_ = (long long)(expected);                                \
        a_ == e_ ? 1 : (testlib_fail(__FILE__, __LINE__, "%s == %lld, expected %lld", #actual, a_, e_), 0); \
    })

#define CHECK_EQ_UINT_IMPL(actual, expected)                                                           \
    ({                                                                                                 \
        unsigned long long a_ = (unsigned long long)(actual), e_ = (unsigned long long)(expected);      \
        a_ == e_ ? 1 : (testlib_fail(__FILE__, __LINE__, "%s == %llu, expected %llu", #actual, a_, e_), 0); \
    })

#define CHECK_EQ_STR_IMPL(actual, expected)                                                            \
    ({                                                                                                 \
        const char *a_ = (actual), *e_ = (expected);                                                   \
        ((a_ == NULL && e_ == NULL) || (a_ && e_ && strcmp(a_, e_) == 0))                              \
            ? 1                                                                                        \
            : (testlib_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #actual,              \
                            TESTLIB_STR_OR_NULL(a_), TESTLIB_STR_OR_NULL(e_)),                         \
               0);                                                                                     \
    })

#define CHECK(cond) ((void)CHECK_IMPL(cond))
#define CHECK_EQ_INT(a, e) ((void)CHECK_EQ_INT_IMPL(a, e))
#define CHECK_EQ_UINT(a, e) ((void)CHECK_EQ_UINT_IMPL(a, e))
#define CHECK_EQ_STR(a, e) ((void)CHECK_EQ_STR_IMPL(a, e))

#define REQUIRE(cond) do { if (!CHECK_IMPL(cond)) return; } while (0)
#define REQUIRE_EQ_INT(a, e) do { if (!CHECK_EQ_INT_IMPL(a, e)) return; } while (0)
#define REQUIRE_EQ_STR(a, e) do { if (!CHECK_EQ_STR_IMPL(a, e)) return; } while (0)

/* Fail with a message and go on. */
#define FAIL(...) testlib_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Run the registered tests (those whose name contains filter, if given);
 * returns the number that failed. */
static inline int testlib_run(const char *filter)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < testlib_n_cases; i++) {
        if (filter && strstr(testlib_cases[i].name, filter) == NULL)
            continue;
        testlib_current_failed = 0;
        testlib_first_reason[0] = '\0';
        testlib_cases[i].fn();
        if (testlib_current_failed) {
            printf("FAIL - %s: %s\n", testlib_cases[i].name, testlib_first_reason);
            failed++;
        } else {
            printf("ok - %s\n", testlib_cases[i].name);
            passed++;
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
    return failed;
}

#ifndef TESTLIB_NO_MAIN
int main(int argc, char **argv)
{
    return testlib_run(argc > 1 ? argv[1] : NULL) ? 1 : 0;
}
#endif

#endif
