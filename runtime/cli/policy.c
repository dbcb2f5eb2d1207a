/* policy show [--tier N] [--bundle DIR]: what a tier does to a config.json,
 * so an operator can review it before any container runs. The mapping is
 * the one create uses, with the operator settings of the global flags. */
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "spec/spec.h"
#include "tier-annotations/tier.h"
#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

/* As if config.json carried io.agentcage.tier=value. */
static void annotate_tier(yajl_val tree, const char *value)
{
    yajl_val annotations = NULL;
    for (size_t i = 0; i < tree->u.object.len; i++)
        if (strcmp(tree->u.object.keys[i], "annotations") == 0)
            annotations = tree->u.object.values[i];
    if (!YAJL_IS_OBJECT(annotations)) {
        /* yajl_tree_free releases nodes, keys and arrays with free() */
        yajl_val obj = xcalloc(1, sizeof(*obj));
        obj->type = yajl_t_object;
        size_t n = tree->u.object.len;
        tree->u.object.keys = xrealloc(tree->u.object.keys, (n + 1) * sizeof(*tree->u.object.keys));
        tree->u.object.values = xrealloc(tree->u.object.values, (n + 1) * sizeof(*tree->u.object.values));
        tree->u.object.keys[n] = xstrdup("annotations");
        tree->u.object.values[n] = obj;
        tree->u.object.len = n + 1;
        annotations = obj;
    }
    yajl_val v = xcalloc(1, sizeof(*v));
    v->type = yajl_t_string;
    v->u.string = xstrdup(value);
    for (size_t i = 0; i < annotations->u.object.len; i++) {
        if (strcmp(annotations->u.object.keys[i], "io.agentcage.tier") == 0) {
            yajl_tree_free(annotations->u.object.values[i]);
            annotations->u.object.values[i] = v;
            return;
        }
    }
    size_t n = annotations->u.object.len;
    annotations->u.object.keys = xrealloc(annotations->u.object.keys, (n + 1) * sizeof(*annotations->u.object.keys));
    annotations->u.object.values =
        xrealloc(annotations->u.object.values, (n + 1) * sizeof(*annotations->u.object.values));
    annotations->u.object.keys[n] = xstrdup("io.agentcage.tier");
    annotations->u.object.values[n] = v;
    annotations->u.object.len = n + 1;
}

COMMAND(policy)
{
    static const struct option opts[] = {
        {"tier", required_argument, NULL, 't'}, {"bundle", required_argument, NULL, 'b'}, {NULL, 0, NULL, 0}};
    const char *tier_arg = NULL, *bundle = NULL;
    if (argc < 2 || strcmp(argv[1], "show") != 0)
        return ac_error(err, 0, "policy: usage: policy show [--tier N] [--bundle DIR]");
    argc--;
    argv++;
    int c;
    while ((c = cli_getopt(argc, argv, "+t:b:", opts)) != -1) {
        if (c == 't')
            tier_arg = optarg;
        else if (c == 'b')
            bundle = optarg;
        else
            return ac_error(err, 0, "policy show: unknown flag `%s`", argv[optind - 1]);
    }
    if (optind < argc)
        return ac_error(err, 0, "policy show: unexpected argument `%s`", argv[optind]);

    cleanup_free char *text = NULL;
    size_t len = 0;
    cleanup_free char *path = bundle ? xasprintf("%s/config.json", bundle) : NULL;
    if (path) {
        if (read_all_file(path, &text, &len, err) < 0)
            return -1;
    } else {
        text = spec_default_json(false, cgroup_host_mode() == CGROUP_MODE_V2);
        len = strlen(text);
    }
    yajl_val tree = NULL;
    if (spec_parse_json_tree(text, len, path ? path : "the default spec", &tree, err) < 0)
        return -1;
    if (tier_arg)
        annotate_tier(tree, tier_arg);
    struct tier_decisions decisions = {0};
    cleanup_free char *bundle_dir = bundle ? realpath(bundle, NULL) : NULL;
    int tier = tier_map(tree, bundle_dir, &g->tier, &decisions, err);
    if (tier < TIER_NONE) {
        /* every refusal, each on its own line; the first is the error */
        for (size_t i = 0; i < decisions.n; i++)
            if (strncmp(decisions.lines[i], "refused: ", 9) == 0)
                printf("# %s\n", decisions.lines[i]);
        yajl_tree_free(tree);
        tier_decisions_free(&decisions);
        return -1;
    }
    /* the effective config must be one create accepts */
    cleanup_spec struct oci_spec *spec = NULL;
    if (spec_parse_tree(tree, "effective config.json", &spec, err) < 0) {
        yajl_tree_free(tree);
        tier_decisions_free(&decisions);
        return -1;
    }
    cleanup_free char *json = tier_tree_to_json(tree, true);
    yajl_tree_free(tree);
    printf("%s\n", json ? json : "");
    if (tier == TIER_NONE)
        printf("# no tier: no io.agentcage.tier annotation and no --default-tier; runs as a plain OCI container\n");
    for (size_t i = 0; i < decisions.n; i++)
        printf("# %s\n", decisions.lines[i]);
    tier_decisions_free(&decisions);
    if (tier != TIER_NONE && tier_kernel_is_gvisor(spec_annotation(spec, "io.agentcage.kernel")))
        printf("# kernel: gVisor (%s --platform=%s), a second kernel between the workload and the host's\n",
               g->tier.runsc, g->tier.runsc_platform);
    else if (tier != TIER_NONE)
        printf("# kernel: the host's, shared with the workload behind namespaces, seccomp and Landlock "
               "(kernel-for-tier %d:gvisor or io.agentcage.kernel=gvisor puts gVisor's in between)\n",
               tier);
    return 0;
}
