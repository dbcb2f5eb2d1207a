/* update [--resources FILE|-] [runc's resource flags] ID */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup.h"
#include "runtime/cli/commands.h"
#include "runtime/util/utils.h"

enum { OPT_MEMORY = 256, OPT_SWAP, OPT_RESERVATION, OPT_KMEM, OPT_KMEM_TCP, OPT_SHARES, OPT_PERIOD, OPT_QUOTA,
       OPT_RT_PERIOD, OPT_RT_RUNTIME, OPT_CPUS, OPT_MEMS, OPT_PIDS, OPT_BLKIO, OPT_L3, OPT_MEMBW };

/* A size in bytes: "1048576", "512k", "100M", "2g"; -1 = unlimited. */
static int parse_size(const char *s, int64_t *out)
{
    if (strcmp(s, "-1") == 0) {
        *out = -1;
        return 0;
    }
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    double mult = 1;
    switch (*end) {
    case '\0': break;
    case 'b': case 'B': mult = 1; end++; break;
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (*end == 'b' || *end == 'B' || *end == 'i')
        end++;
    if (*end)
        return -1;
    *out = (int64_t)(v * mult);
    return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end)
        return -1;
    *out = v;
    return 0;
}

COMMAND(update)
{
    static const struct option opts[] = {
        {"resources", required_argument, NULL, 'r'},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"memory-swap", required_argument, NULL, OPT_SWAP},
        {"memory-reservation", required_argument, NULL, OPT_RESERVATION},
        {"kernel-memory", required_argument, NULL, OPT_KMEM},
        {"kernel-memory-tcp", required_argument, NULL, OPT_KMEM_TCP},
        {"cpu-shares", required_argument, NULL, OPT_SHARES},
        {"cpu-period", required_argument, NULL, OPT_PERIOD},
        {"cpu-quota", required_argument, NULL, OPT_QUOTA},
        {"cpu-rt-period", required_argument, NULL, OPT_RT_PERIOD},
        {"cpu-rt-runtime", required_argument, NULL, OPT_RT_RUNTIME},
        {"cpuset-cpus", required_argument, NULL, OPT_CPUS},
        {"cpuset-mems", required_argument, NULL, OPT_MEMS},
        {"pids-limit", required_argument, NULL, OPT_PIDS},
        {"blkio-weight", required_argument, NULL, OPT_BLKIO},
        {"l3-cache-schema", required_argument, NULL, OPT_L3},
        {"mem-bw-schema", required_argument, NULL, OPT_MEMBW},
        {NULL, 0, NULL, 0},
    };
    const char *resources_file = NULL;
    cleanup_spec struct oci_spec *flags = spec_new_empty();
    struct oci_resources *r = spec_alloc(flags, sizeof(*r));
    int c;
    int64_t v;
    /* flags may follow the id too (runc takes `update ID --memory 1M`) */
    while ((c = cli_getopt(argc, argv, "r:", opts)) != -1) {
        const char *name = c >= 256 ? opts[c - 256 + 1].name : "resources";
        bool bad = false;
        switch (c) {
        case 'r': resources_file = optarg; break;
        case OPT_MEMORY: bad = parse_size(optarg, &v) < 0; r->has_memory = r->memory.has_limit = true; r->memory.limit = v; break;
        case OPT_SWAP: bad = parse_size(optarg, &v) < 0; r->has_memory = r->memory.has_swap = true; r->memory.swap = v; break;
        case OPT_RESERVATION: bad = parse_size(optarg, &v) < 0; r->has_memory = r->memory.has_reservation = true; r->memory.reservation = v; break;
        case OPT_KMEM: case OPT_KMEM_TCP: bad = parse_size(optarg, &v) < 0; break; /* ignored as by runc on new kernels */
        case OPT_SHARES: bad = parse_i64(optarg, &v) < 0 || v < 0; r->has_cpu = r->cpu.has_shares = true; r->cpu.shares = (uint64_t)v; break;
        case OPT_PERIOD: bad = parse_i64(optarg, &v) < 0 || v < 0; r->has_cpu = r->cpu.has_period = true; r->cpu.period = (uint64_t)v; break;
        case OPT_QUOTA: bad = parse_i64(optarg, &v) < 0; r->has_cpu = r->cpu.has_quota = true; r->cpu.quota = v; break;
        case OPT_RT_PERIOD: bad = parse_i64(optarg, &v) < 0 || v < 0; r->has_cpu = r->cpu.has_realtime_period = true; r->cpu.realtime_period = (uint64_t)v; break;
        case OPT_RT_RUNTIME: bad = parse_i64(optarg, &v) < 0; r->has_cpu = r->cpu.has_realtime_runtime = true; r->cpu.realtime_runtime = v; break;
        case OPT_CPUS: r->has_cpu = true; r->cpu.cpus = spec_strdup(flags, optarg); break;
        case OPT_MEMS: r->has_cpu = true; r->cpu.mems = spec_strdup(flags, optarg); break;
        case OPT_PIDS: bad = parse_i64(optarg, &v) < 0; r->has_pids = r->has_pids_limit = true; r->pids_limit = v; break;
        case OPT_BLKIO: bad = parse_i64(optarg, &v) < 0 || v < 0 || v > 1000; r->has_blkio = r->blkio.has_weight = true; r->blkio.weight = (uint16_t)v; break;
        case OPT_L3: case OPT_MEMBW: return ac_error(err, 0, "update: --%s: Intel RDT is not supported", name);
        default: return ac_error(err, 0, "update: unknown flag `%s`", argv[optind - 1]);
        }
        if (bad)
            return ac_error(err, 0, "update: --%s: invalid value `%s`", name, optarg);
    }
    const char *id;
    if (cli_one_id(argc, argv, "update [--resources FILE|-] [flags] ID", &id, err) < 0)
        return -1;
    cleanup_spec struct oci_spec *from_file = NULL;
    if (resources_file) {
        cleanup_free char *text = NULL;
        size_t len = 0;
        if (strcmp(resources_file, "-") == 0 ? read_all_fd(0, &text, &len, err) < 0
                                              : read_all_file(resources_file, &text, &len, err) < 0)
            return -1;
        if (spec_parse_resources(text, len, "resources", &from_file, err) < 0)
            return -1;
        r = from_file->linux->resources;
    }
    cleanup_close int lock = -1;
    cleanup_state struct container_state *st = NULL;
    enum container_status status;
    if (state_open(g, id, &lock, &st, &status, err) < 0)
        return -1;
    if (status == STATUS_STOPPED)
        return ac_error(err, 0, "cannot update container `%s`: it is stopped", id);
    if (!st->cgroup_path[0])
        return ac_error(err, 0, "cannot update container `%s`: it has no cgroup", id);
    return cgroup_update(st->cgroup_path, r, err);
}
