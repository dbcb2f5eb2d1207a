/* Build-time generator: tiers.json parsed (tier_data.c, as it is compiled
 * for this program) and written out as C initializers, so the runtime reads
 * the tier definitions as data it never parses (a tiered create saved the
 * 0.1-0.2 ms of a yajl tree of 10 KB). A tiers.json the parser refuses
 * fails the build with the parser's message. */
#include <stdio.h>
#include <string.h>

#include "runtime/util/error.h"
#include "tier-annotations/tier_internal.h"

static void put_string(const char *s)
{
    if (s == NULL) {
        fputs("NULL", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            printf("\\%03o", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void put_strv_array(const char *name, const struct tier_strv *sv)
{
    printf("static const char *%s[] = {", name);
    for (size_t i = 0; i < sv->n; i++) {
        put_string(sv->v[i]);
        fputs(", ", stdout);
    }
    puts("NULL};");
}

#define STRVS(X)                                                                                                 \
    X(masked_paths) X(readonly_paths) X(credential_paths) X(rc_files) X(home_dot_allow) X(safe_env)             \
    X(secret_value_prefixes) X(forbidden_sources) X(plumbing_mounts) X(mount_types) X(refused_caps)             \
    X(default_bind_roots) X(kernel_mounts) X(sysctls) X(bundle_annotations) X(mapping_annotations)              \
    X(accepted_fields)

int main(void)
{
    const struct tier_defs *d;
    ac_error_t err = NULL;
    if (tier_defs_get(&d, &err) < 0) {
        fprintf(stderr, "tier_defs_gen: %s\n", err->msg);
        return 1;
    }
    puts("/* Generated from tier-annotations/tiers.json by tier-annotations/gen/tier_defs_gen.c: do not edit. */");
    puts("#include \"tier-annotations/tier_internal.h\"\n");
#define ARRAY(f) put_strv_array("v_" #f, &d->f);
    STRVS(ARRAY)
    puts("static struct tier_device devices[] = {");
    for (size_t i = 0; i < d->n_devices; i++) {
        fputs("    {", stdout);
        put_string(d->devices[i].path);
        fputs(", ", stdout);
        put_string(d->devices[i].type);
        printf(", %lld, %lld},\n", (long long)d->devices[i].major, (long long)d->devices[i].minor);
    }
    puts("};\n");
    puts("const struct tier_defs tier_defs_compiled = {");
    puts("    .tier = {");
    for (size_t t = 0; t < TIER_COUNT; t++) {
        const struct tier_def *def = &d->tier[t];
        const struct tier_limits *l = &def->limits;
        fputs("        {.name = ", stdout);
        put_string(def->name);
        printf(", .limits = {%lldLL, %lldLL, %lldLL, %lldLL, %lldLL}, .binds_readonly = %d, .network = ",
               (long long)l->memory, (long long)l->cpus_milli, (long long)l->pids, (long long)l->workspace,
               (long long)l->timeout_ms, def->binds_readonly);
        put_string(def->network);
        fputs(", .seccomp = ", stdout);
        put_string(def->seccomp);
        printf(", .approval = %d, .audit = %d},\n", def->approval, def->audit);
    }
    puts("    },");
#define FIELD(f) printf("    .%s = {v_%s, %zu},\n", #f, #f, d->f.n);
    STRVS(FIELD)
    printf("    .devices = devices,\n    .n_devices = %zu,\n};\n", d->n_devices);
    return 0;
}
