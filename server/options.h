/*
 * detshare-server's command-line options, the one list of them: main.c makes its getopt
 * table and its --help from it, and the server_options test holds docs/admin.md's
 * option table to --help.
 *
 * X(name, code, short_too, has_arg, argument, help): getopt_long's name, has_arg and
 * code (the letter main.c switches on; short_too: -code works too), the argument as
 * --help shows it (NULL without one) and the help, lines split by '\n'.
 */
#ifndef DS_SERVER_OPTIONS_H
#define DS_SERVER_OPTIONS_H

#define DS_SERVER_OPTIONS(X)                                                                  \
    X("device", 'd', 0, required_argument, "sim|cuda|auto",                                \
      "device backend (default auto: cuda when the GPU is\nusable, else sim)")              \
    X("gpu", 'g', 0, required_argument, "N", "host GPU ordinal to serve (default 0)")         \
    X("listen", 'l', 0, required_argument, "unix:PATH|tcp:HOST:PORT",                        \
      "listen on a Unix socket or on TCP (repeatable);\n"                                     \
      "TCP needs --token-file or --insecure\n"                                                \
      "default: one Unix socket at $XDG_RUNTIME_DIR/detshare.sock,\n"                         \
      "or /tmp/detshare-UID/detshare.sock without it")                                        \
    X("token-file", 't', 0, required_argument, "PATH",                                        \
      "tokens TCP tenants must show (DETSHARE_TOKEN or\n"                                     \
      "DETSHARE_TOKEN_FILE): one per line, optionally followed\n"                             \
      "by the tenant-name prefix it may be used with; '#'\n"                                  \
      "starts a comment (docs/security.md)")                                                  \
    X("insecure", 'I', 0, no_argument, NULL,                                                  \
      "allow TCP listeners without a token file: anyone who\n"                                \
      "can reach one (on loopback, every local user) can use\n"                               \
      "the GPU; traffic is never encrypted")                                                  \
    X("tls-cert", 'C', 0, required_argument, "FILE",                                          \
      "TCP tenants may use TLS 1.3 (DETSHARE_TLS=1 or\n"                                       \
      "DETSHARE_TLS_CA): this certificate chain (PEM) names\n"                                 \
      "the server to them; with --tls-key (docs/security.md)")                                 \
    X("tls-key", 'K', 0, required_argument, "FILE", "the certificate's private key (PEM)")     \
    X("tls-only", 'O', 0, no_argument, NULL,                                                  \
      "refuse TCP tenants that do not use TLS (needs\n--tls-cert)")                             \
    X("unix-token", 'U', 0, no_argument, NULL,                                               \
      "Unix tenants must show a token too, from --token-file\n"                              \
      "or added through the admin socket (detshare-ctl token;\n"                              \
      "the Kubernetes device plugin mints one per pod)")                                      \
    X("sim-sms", 's', 0, required_argument, "N", "sim device: SM count (default 132)")        \
    X("sim-memory", 'm', 0, required_argument, "SIZE",                                        \
      "sim device: memory, e.g. 80G or 512MiB (default 80G)")                                 \
    X("tenant-host-memory", 'H', 0, required_argument, "SIZE|none",                           \
      "host memory an executor may hold for its\n"                                            \
      "tenant's pending calls (large records, calls held\n"                                   \
      "at its gate) before refusing them (default 1GiB)")                                     \
    X("host-memory", 'T', 0, required_argument, "SIZE|none",                                  \
      "the same for all executors together (default half\nthe machine's memory)")             \
    X("config", 'c', 0, required_argument, "PATH",                                            \
      "quotas by tenant name, one per line:\n"                                                \
      "  quota NAME|PREFIX* memory=SIZE sm-share=PCT\n"                                       \
      "        kernel-time=PCT class=CLASS isolation=DOMAIN\n"                                \
      "        uid=UID\n"                                                                     \
      "and optionally a line policy-dir DIR\n"                                                \
      "read at start and again on SIGHUP, which also reads\n"                                 \
      "--token-file again (docs/admin.md)")                                                   \
    X("mps", 'M', 0, required_argument, "start|external|off",                                 \
      "GPU sharing between executors: start (default) runs\n"                                 \
      "a private MPS control daemon for the GPU and stops it\n"                               \
      "on exit; external uses the one CUDA_MPS_PIPE_DIRECTORY\n"                              \
      "names; off time-slices the GPU between tenants")                                       \
    X("mps-dir", 'D', 0, required_argument, "DIR",                                            \
      "where the daemon's pipes and logs go (default\n"                                       \
      "$XDG_RUNTIME_DIR or /tmp, detshare-mps-UID-gpuN)")                                     \
    X("isolation", 'i', 0, required_argument, "shared|own|group:NAME",                        \
      "fault domain of tenants whose quota rule sets none\n"                                  \
      "(default shared): under MPS a kernel's fault ends every\n"                             \
      "shared tenant's context; an own tenant is no MPS client,\n"                            \
      "takes turns with the others and keeps its faults to\n"                                 \
      "itself; a group's tenants share an MPS daemon of their\n"                              \
      "own (docs/reliability.md)")                                                            \
    X("quarantine", 'q', 0, required_argument, "DURATION",                                    \
      "a tenant name whose kernel faulted in the shared domain\n"                             \
      "runs in its own for this long (e.g. 600, 90s, 10m, 2h;\n"                              \
      "default 10m; 0: never)")                                                               \
    X("policy", 'p', 0, required_argument, "NAME|PATH",                                      \
      "who runs on which SMs (default slo-aware); a PATH (with\n"                             \
      "a '/') loads a policy from a shared object\n"                                          \
      "(examples/policy/first_half.c); built in:")                                            \
    X("policy-dir", 'L', 0, required_argument, "DIR",                                         \
      "detshare-ctl may load policy files from DIR only (none\n"                              \
      "without it); root's or the server's user's alone\n"                                    \
      "(docs/policies.md)")                                                                   \
    X("admin", 'a', 0, required_argument, "unix:PATH|none",                                   \
      "admin socket for detshare-ctl, owner only (default:\n"                                 \
      "the first Unix listener's path with .admin added)")                                    \
    X("admin-group", 'G', 0, required_argument, "GROUP",                                      \
      "open the admin socket to GROUP too (mode 0660);\n"                                     \
      "members can switch policies (docs/security.md)")                                       \
    X("metrics", 'P', 0, required_argument, "tcp:HOST:PORT|unix:PATH",                        \
      "serve Prometheus metrics over HTTP at\n"                                               \
      "/metrics (docs/metrics.md); no authentication: bind\n"                                 \
      "it where only the scraper reaches")                                                    \
    X("warm", 'w', 0, required_argument, "N",                                                 \
      "executors kept started ahead of tenants, with the\n"                                   \
      "device open, so that connecting takes milliseconds\n"                                  \
      "(default 1; 0 starts each when its tenant connects)")                                  \
    X("spin-us", 'u', 0, required_argument, "N",                                              \
      "executors poll N microseconds for a tenant's next call,\n"                             \
      "and for the GPU in a synchronisation, before sleeping\n"                               \
      "(default 50; 0 never polls)")                                                          \
    X("sync-spin-us", 'y', 0, required_argument, "N",                                         \
      "while a tenant waits in a synchronisation, its\n"                                     \
      "executor polls the GPU up to N microseconds before\n"                                 \
      "sleeping (default 2000; at least --spin-us)")                                          \
    X("help", 'h', 1, no_argument, NULL, "this text")

#endif
