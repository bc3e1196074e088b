/* detshare-server: option parsing; the work is in control.c and executor.c. */
#include "config.h"
#include "ds_tls.h"
#include "control.h"
#include "ds_error.h"
#include "ds_log.h"
#include "executor.h"
#include "mps.h"
#include "options.h"
#include "policy.h"
#include "quota.h"
#include "registry.h"
#include "shm.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One option of --help: the option and its argument, then its help from column 26 (two
 * spaces after the option when that is longer). */
static void usage_option(FILE *f, const char *name, int code, int short_too, const char *arg,
                         const char *help)
{
    char head[64], shrt[8] = "";
    const char *nl;

    if (short_too)
        snprintf(shrt, sizeof(shrt), "-%c, ", code);
    snprintf(head, sizeof(head), "%s--%s%s%s", shrt, name, arg != NULL ? " " : "",
             arg != NULL ? arg : "");
    fprintf(f, strlen(head) < 24 ? "  %-24s" : "  %s  ", head);
    while ((nl = strchr(help, '\n')) != NULL) {
        fprintf(f, "%.*s\n%26s", (int)(nl - help), help, "");
        help = nl + 1;
    }
    fprintf(f, "%s\n", help);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: detshare-server [options]\n"
               "Share one GPU among tenants that reach it through detshare's libcuda.so.1.\n\n");
    /* --policy's help ends with the built-in policies. */
#define OPTION_HELP(o_name, o_code, o_short, o_has_arg, o_arg, o_help)       \
    usage_option(f, o_name, o_code, o_short, o_arg, o_help);                   \
    for (int i = 0; o_code == 'p' && ds_policies[i] != NULL; i++)              \
        fprintf(f, "%28s%-9s %s\n", "", ds_policies[i]->name, ds_policies[i]->about);
    DS_SERVER_OPTIONS(OPTION_HELP)
#undef OPTION_HELP
    fprintf(f,
            "\n"
            "Tenants: LD_LIBRARY_PATH=PREFIX/lib/detshare (or <build>/client)\n"
            "         DETSHARE_SERVER=unix:PATH ./program\n"
            "Signals: SIGHUP reads --config and --token-file again; SIGTERM or SIGINT stops\n"
            "the server, its executors and the MPS daemon it started.\n"
            "Logs go to stderr; DETSHARE_LOG=debug shows every failed call.\n");
}

/* A TCP listener lets whoever reaches it use the GPU: it takes tokens, or the operator's
 * explicit --insecure.  Loopback is no exception: every user and container of the host
 * reaches it.  Returns 0 or -1 after saying why. */
static int check_tcp(const struct ds_server_config *cfg, int insecure)
{
    char where[300];

    if (cfg->tokens != NULL || insecure)
        return 0;
    for (int i = 0; i < cfg->nlisten; i++) {
        if (cfg->listen[i].kind == DS_ADDR_UNIX)
            continue;
        ds_addr_format(&cfg->listen[i], where, sizeof(where));
        ds_error("refusing to listen on %s without tokens: anyone who can reach it could use "
                 "the GPU (on loopback too: every user and container of this host).  Give "
                 "--token-file PATH (tenants then set DETSHARE_TOKEN), or --insecure to allow "
                 "it anyway", where);
        return -1;
    }
    return 0;
}

static void log_sim(const struct ds_server_config *cfg, const char *why)
{
    ds_info("device: sim (%s; %d SMs, %llu MiB)", why, cfg->sim_sms,
            (unsigned long long)(cfg->sim_memory >> 20));
}

/* auto: the GPU when the cuda backend can serve it, else sim, saying why. */
static int choose_device(const char *want, struct ds_server_config *cfg)
{
    struct ds_backend_want w = { .gpu = cfg->gpu, .sim_sms = cfg->sim_sms,
                                 .sim_memory = cfg->sim_memory };
    const struct ds_backend_entry *e = NULL;
    char why[160];
    int rc = ds_registry_choose(want, &w, &e, &cfg->sm, &cfg->device_memory, why,
                                sizeof(why));

    if (rc == DS_EINVAL) {
        ds_error("--device %s: expected %s", want, why);
        return -1;
    }
    if (rc != 0) {
        ds_error("--device %s: GPU %d cannot be used: %s", want, cfg->gpu, why);
        return -1;
    }
    cfg->backend = e;
    cfg->device = e->device;
    if (e->device != DS_SHM_SIM)
        ds_info("device: %s, GPU %d", e->name, cfg->gpu);
    else
        log_sim(cfg, strcmp(want, "auto") == 0 ? why : "asked for");
    return 0;
}

/* A group name or number, for --admin-group.  Returns 0, or -1 after saying why. */
static int set_admin_group(const char *arg, struct ds_server_config *cfg)
{
    struct group *g;
    char *end;
    unsigned long n;

    errno = 0;
    g = getgrnam(arg);
    if (g == NULL && errno == 0 && arg[0] >= '0' && arg[0] <= '9') {
        n = strtoul(arg, &end, 10);
        if (*end == '\0' && n < (gid_t)-1)
            g = getgrgid((gid_t)n);
    }
    if (g == NULL) {
        fprintf(stderr, "detshare-server: --admin-group %s: %s\n", arg,
                errno != 0 ? strerror(errno) : "no such group");
        return -1;
    }
    cfg->admin_gid = g->gr_gid;
    return 0;
}

static int set_metrics(const char *arg, struct ds_server_config *cfg)
{
    if (ds_addr_parse(arg, &cfg->metrics) != 0) {
        fprintf(stderr, "detshare-server: --metrics takes tcp:HOST:PORT or unix:PATH, not %s\n",
                arg);
        return -1;
    }
    cfg->has_metrics = 1;
    return 0;
}

static int set_admin(const char *arg, struct ds_server_config *cfg)
{
    struct ds_addr a;

    if (strcmp(arg, "none") == 0) {
        snprintf(cfg->admin, sizeof(cfg->admin), "%s", "-");
        return 0;
    }
    if (ds_addr_parse(arg, &a) != 0 || a.kind != DS_ADDR_UNIX) {
        fprintf(stderr, "detshare-server: --admin takes unix:PATH or none, not %s\n", arg);
        return -1;
    }
    snprintf(cfg->admin, sizeof(cfg->admin), "%s", a.path);
    return 0;
}

/* Beside the first Unix listener, unless --admin said otherwise. */
/* The default socket, in a directory no other user can create files in, made and checked
 * here, before the admin socket beside it is.  Returns 0, or -1 after saying why not. */
static int default_listen(struct ds_server_config *cfg)
{
    struct ds_addr *a = &cfg->listen[cfg->nlisten++];
    char why[300];

    ds_addr_default(a);
    if (ds_addr_private_dir(a, why, sizeof(why)) == 0)
        return 0;
    ds_error("will not listen on the default unix:%s: %s (or give --listen)", a->path, why);
    return -1;
}

static void default_admin(struct ds_server_config *cfg)
{
    if (strcmp(cfg->admin, "-") == 0) {
        cfg->admin[0] = '\0';
        return;
    }
    for (int i = 0; i < cfg->nlisten && cfg->admin[0] == '\0'; i++)
        if (cfg->listen[i].kind == DS_ADDR_UNIX &&
            strlen(cfg->listen[i].path) + sizeof(".admin") <= sizeof(cfg->admin))
            snprintf(cfg->admin, sizeof(cfg->admin), "%s.admin", cfg->listen[i].path);
}

/* The config file's quotas, and its policy-dir into dir, or -1 after saying why the server
 * will not start. */
static int load_config(struct ds_server_config *cfg, char *dir, size_t len)
{
    const char *why;

    if (ds_config_load_at_start(cfg->config, cfg->quotas, &cfg->nquotas, dir, len) != 0) {
        ds_error("not starting: fix %s first", cfg->config);
        return -1;
    }
    if ((why = ds_quota_groups_check(cfg->quotas, cfg->nquotas, cfg->isolation_group)) != NULL) {
        ds_error("%s: %s; not starting", cfg->config, why);
        return -1;
    }
    ds_info("%u quota(s) from %s", cfg->nquotas, cfg->config);
    return 0;
}

/* "600", "90s", "10m", "2h" -> nanoseconds (0 allowed).  Returns 0, or -1. */
static int parse_duration(const char *arg, uint64_t *ns)
{
    char *end;
    unsigned long long n;
    uint64_t unit = 1;

    errno = 0;
    n = strtoull(arg, &end, 10);
    if (end == arg || errno != 0 || arg[0] == '-')
        return -1;
    if (strcmp(end, "m") == 0)
        unit = 60;
    else if (strcmp(end, "h") == 0)
        unit = 3600;
    else if (strcmp(end, "s") != 0 && end[0] != '\0')
        return -1;
    if (n > UINT64_MAX / 1000000000ull / unit)
        return -1;
    *ns = n * unit * 1000000000ull;
    return 0;
}

/* Where detshare-ctl may load policies from (none without dir).  Returns 0, or -1 after
 * saying why the server will not start. */
static int set_policy_dir(const char *dir)
{
    char why[PATH_MAX + 128];

    if (dir[0] == '\0')
        return 0;
    if (ds_policy_set_dir(dir, why, sizeof(why)) != 0) {
        ds_error("not starting: the policy directory %s cannot be trusted with code that runs "
                 "as this server: %s", dir, why);
        return -1;
    }
    ds_info("policy directory %s: detshare-ctl may load policies from files there", dir);
    return 0;
}

/* --tls-cert, --tls-key and --tls-only.  Returns 0, or 2 after saying why. */
static int set_tls(struct ds_server_config *cfg, const char *cert, const char *key)
{
    char why[320], where[300] = "";

    for (int i = 0; i < cfg->nlisten && where[0] == '\0'; i++)
        if (cfg->listen[i].kind != DS_ADDR_UNIX)
            ds_addr_format(&cfg->listen[i], where, sizeof(where));
    if ((cert == NULL) != (key == NULL) || (cfg->tls_only && cert == NULL)) {
        ds_error("%s", cfg->tls_only && cert == NULL
                           ? "--tls-only needs --tls-cert and --tls-key"
                           : "--tls-cert and --tls-key go together");
        return 2;
    }
    if (cert == NULL)
        return 0;
    if ((cfg->tls = ds_tls_server_ctx(cert, key, why, sizeof(why))) == NULL) {
        ds_error("cannot use --tls-cert %s with --tls-key %s: %s", cert, key,
                 why);
        return 2;
    }
    if (where[0] == '\0')
        ds_warn("--tls-cert changes nothing: there is no TCP listener (Unix tenants never use TLS)");
    else
        ds_info("TCP tenants on %s%s may use TLS 1.3%s", where, cfg->nlisten > 1 ? "..." : "",
                cfg->tls_only ? ", and must" : "");
    return 0;
}

/* What --insecure means here, said once at start. */
static void warn_insecure(const struct ds_server_config *cfg)
{
    char where[300] = "";

    for (int i = 0; i < cfg->nlisten && where[0] == '\0'; i++)
        if (cfg->listen[i].kind != DS_ADDR_UNIX)
            ds_addr_format(&cfg->listen[i], where, sizeof(where));
    if (cfg->tokens != NULL)
        ds_warn("--insecure changes nothing: with --token-file, TCP tenants still show a token");
    else if (where[0] == '\0')
        ds_warn("--insecure changes nothing: there is no TCP listener");
    else
        ds_warn("--insecure: TCP listeners (%s...) take tenants without a token: anyone who "
                "reaches one (on loopback, every user and container of this host) may use "
                "the GPU, and everything sent, kernels and data included, is cleartext", where);
}

/* Run the control process, with the MPS daemon the device needs.  Returns the exit
 * status. */
static int serve(struct ds_server_config *cfg, enum ds_mps_mode mps_mode, const char *mps_dir)
{
    struct ds_mps mps;
    int rc;

    /* The sim has no daemon: its tenants' work overlaps as it would under MPS. */
    if (!cfg->backend->mps) {
        ds_info("MPS: not needed on the sim device (it models shared SMs)");
        snprintf(cfg->mps, sizeof(cfg->mps), "not needed (sim)");
        cfg->mps_mode = "none";
        return ds_control_run(cfg);
    }
    /* Before any listener or thread exists: the daemon is forked from this process. */
    if (ds_mps_start(&mps, mps_mode, cfg->gpu, mps_dir) != 0)
        return 1;
    cfg->mps_daemon = mps.daemon;
    cfg->mps_mode = ds_mps_mode_name(mps_mode);
    if (mps_mode == DS_MPS_START) {
        snprintf(cfg->own_mps_pipe, sizeof(cfg->own_mps_pipe), "%s", mps.none);
        snprintf(cfg->mps_dir, sizeof(cfg->mps_dir), "%s", mps.dir);
    }
    if (mps.daemon > 0)
        snprintf(cfg->mps, sizeof(cfg->mps), "%s (daemon pid %d)", ds_mps_mode_name(mps_mode),
                 (int)mps.daemon);
    else
        snprintf(cfg->mps, sizeof(cfg->mps), "%s", ds_mps_mode_name(mps_mode));
    rc = ds_control_run(cfg);
    ds_mps_stop(&mps);
    return rc;
}

/* A host memory limit: a size, or none (0). */
static int host_size(const char *arg, uint64_t *out)
{
    if (strcmp(arg, "none") == 0) {
        *out = 0;
        return 0;
    }
    return ds_quota_parse_size(arg, out);
}

/* What the command line says beside the server's configuration. */
struct cmdline {
    enum ds_mps_mode mps_mode;
    const char *device, *mps_dir, *policy_dir;
    int insecure;
    const char *tls_cert, *tls_key;
};

/* What an option's function returns when the command line goes on. */
#define NEXT_OPTION (-1)

/* Option c, one of the device's and the resources' (or none known), with argument arg.
 * Returns NEXT_OPTION, or the exit status after saying why. */
static int device_option(int c, const char *arg, struct ds_server_config *cfg,
                         struct cmdline *cl)
{
    switch (c) {
    case 'd':
        cl->device = arg;
        break;
    case 'g':
        cfg->gpu = atoi(arg);
        break;
    case 's':
        cfg->sim_sms = atoi(arg);
        if (cfg->sim_sms <= 0 || cfg->sim_sms > 1024) {
            fprintf(stderr, "detshare-server: --sim-sms must be 1..1024\n");
            return 2;
        }
        break;
    case 'm':
        if (ds_quota_parse_size(arg, &cfg->sim_memory) != 0) {
            fprintf(stderr, "detshare-server: bad --sim-memory: %s\n", arg);
            return 2;
        }
        break;
    case 'H':
    case 'T':
        if (host_size(arg, c == 'H' ? &cfg->host_limit : &cfg->host_total) != 0) {
            fprintf(stderr, "detshare-server: --%s takes a size (1GiB, 512MiB) or none\n",
                    c == 'H' ? "tenant-host-memory" : "host-memory");
            return 2;
        }
        break;
    case 'u':
    case 'y':
        if (atoi(arg) < 0 || atoi(arg) > 1000000) {
            fprintf(stderr, "detshare-server: --%s must be 0..1000000\n",
                    c == 'u' ? "spin-us" : "sync-spin-us");
            return 2;
        }
        *(c == 'u' ? &cfg->spin_us : &cfg->sync_spin_us) = (unsigned)atoi(arg);
        break;
    case 'M':
        if (ds_mps_parse(arg, &cl->mps_mode) != 0) {
            fprintf(stderr, "detshare-server: --mps is start, external or off, not %s\n",
                    arg);
            return 2;
        }
        break;
    case 'D':
        cl->mps_dir = arg;
        break;
    case 'i':
        if (ds_quota_parse_isolation(arg, &cfg->isolation, cfg->isolation_group) != 0 ||
            cfg->isolation == DS_ISO_UNSET) {
            fprintf(stderr, "detshare-server: --isolation is shared, own or group:NAME "
                            "(NAME: 1 to %d letters, digits, '-' or '_'), not %s\n",
                    DS_GROUP_MAX, arg);
            return 2;
        }
        break;
    case 'q':
        if (parse_duration(arg, &cfg->quarantine_ns) != 0) {
            fprintf(stderr, "detshare-server: --quarantine takes a duration (600, 90s, "
                            "10m, 2h, 0), not %s\n", arg);
            return 2;
        }
        break;
    case 'w':
        cfg->warm = atoi(arg);
        if (cfg->warm < 0 || cfg->warm > DS_MAX_WARM) {
            fprintf(stderr, "detshare-server: --warm must be 0..%d\n", DS_MAX_WARM);
            return 2;
        }
        break;
    default:
        usage(stderr);
        return 2;
    }
    return NEXT_OPTION;
}

/* Option c with argument arg.  Returns NEXT_OPTION, or the exit status: after saying
 * why, or after --help. */
static int option_value(int c, const char *arg, struct ds_server_config *cfg,
                        struct cmdline *cl)
{
    switch (c) {
    case 'l':
        if (cfg->nlisten == DS_MAX_LISTEN ||
            ds_addr_parse(arg, &cfg->listen[cfg->nlisten]) != 0) {
            fprintf(stderr, "detshare-server: bad or too many --listen: %s\n", arg);
            return 2;
        }
        cfg->nlisten++;
        break;
    case 't':
        cfg->token_file = arg;
        break;
    case 'c':
        cfg->config = arg;
        break;
    case 'I':
        cl->insecure = 1;
        break;
    case 'U':
        cfg->unix_token = 1;
        break;
    case 'C':
        cl->tls_cert = arg;
        break;
    case 'K':
        cl->tls_key = arg;
        break;
    case 'O':
        cfg->tls_only = 1;
        break;
    case 'a':
        if (set_admin(arg, cfg) != 0)
            return 2;
        break;
    case 'G':
        if (set_admin_group(arg, cfg) != 0)
            return 2;
        break;
    case 'P':
        if (set_metrics(arg, cfg) != 0)
            return 2;
        break;
    case 'L':
        cl->policy_dir = arg;
        break;
    case 'p':
        /* The operator's own command line may load any file; detshare-ctl may not. */
        cfg->policy = strchr(arg, '/') != NULL ? ds_policy_load(arg)
                                               : ds_policy_find(arg);
        if (cfg->policy == NULL) {
            fprintf(stderr, "detshare-server: no policy called %s (try --help)\n", arg);
            return 2;
        }
        break;
    case 'h':
        usage(stdout);
        return 0;
    default:
        return device_option(c, arg, cfg, cl);
    }
    return NEXT_OPTION;
}

int main(int argc, char **argv)
{
#define OPTION_ENTRY(o_name, o_code, o_short, o_has_arg, o_arg, o_help) \
    { o_name, o_has_arg, NULL, o_code },
    static const struct option opts[] = { DS_SERVER_OPTIONS(OPTION_ENTRY){ NULL, 0, NULL, 0 } };
#undef OPTION_ENTRY
    char shorts[8] = "";
    struct ds_server_config cfg = { .sim_sms = 132, .sim_memory = 80ull << 30, .spin_us = 50,
                                   .sync_spin_us = 2000,
                                   .host_limit = DS_SHM_HOST_LIMIT,
                                   .host_total = ds_shm_default_host_total(),
                                   .warm = 1, .policy = &ds_policy_slo_aware,
                                   .admin_gid = (gid_t)-1, .isolation = DS_ISO_SHARED,
                                   .quarantine_ns = 600ull * 1000000000ull };
    struct cmdline cl = { .mps_mode = DS_MPS_START, .device = "auto" };
    char conf_dir[PATH_MAX];
    struct ds_tokens *tokens = NULL;
    int c, rc;

    /* An executor is this program started by the control process (exec_spawn.h). */
    if (argc == 3 && strcmp(argv[1], "--executor") == 0)
        return ds_executor_main(argv[2]);
    ds_log_set_prefix("detshare-server");
#define OPTION_SHORT(o_name, o_code, o_short, o_has_arg, o_arg, o_help) \
    if (o_short)                                                        \
        shorts[strlen(shorts)] = o_code;
    DS_SERVER_OPTIONS(OPTION_SHORT)
#undef OPTION_SHORT
    while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1)
        if ((rc = option_value(c, optarg, &cfg, &cl)) != NEXT_OPTION)
            return rc;
    if (optind < argc) {
        fprintf(stderr, "detshare-server: unexpected argument: %s\n", argv[optind]);
        return 2;
    }
    if (cfg.nlisten == 0 && default_listen(&cfg) != 0)
        return 1;
    default_admin(&cfg);
    if (cfg.token_file != NULL && (cfg.tokens = tokens = ds_tokens_load(cfg.token_file)) == NULL)
        return 2;
    conf_dir[0] = '\0';
    if ((cfg.config != NULL && load_config(&cfg, conf_dir, sizeof(conf_dir)) != 0) ||
        set_policy_dir(cl.policy_dir != NULL ? cl.policy_dir : conf_dir) != 0) {
        ds_tokens_free(tokens);
        return 2;
    }
    if (cl.insecure)
        warn_insecure(&cfg);
    if (set_tls(&cfg, cl.tls_cert, cl.tls_key) != 0 || check_tcp(&cfg, cl.insecure) != 0 ||
        choose_device(cl.device, &cfg) != 0)
        rc = 2;
    else
        rc = serve(&cfg, cl.mps_mode, cl.mps_dir);
    ds_tokens_free(tokens);
    ds_tls_ctx_free(cfg.tls);
    return rc;
}
