/*
 * The preface a tenant shows the server right after connecting and before any RPC
 * (ds_preface.h): its name and its token: DETSHARE_TOKEN, else the first token in the
 * file DETSHARE_TOKEN_FILE names, else none (a server started with --insecure takes
 * that over TCP).  A Unix server checks the token only with --unix-token: otherwise it
 * knows its tenants by their peer credentials, and one set does no harm.
 */
#ifndef DS_CLIENT_TOKEN_H
#define DS_CLIENT_TOKEN_H

#include <cuda.h>

struct ds_tls;

/* Send the preface for tenant `name` on sock, or through TLS session tls when it is not
 * NULL (the token then crosses the network only encrypted), with the token when one is
 * set, and wait for the server's answer; `where` names the server for messages.  Returns
 * CUDA_SUCCESS when accepted, else CUDA_ERROR_NO_DEVICE after one line on stderr saying
 * why (the server's reason when it refused). */
CUresult ds__token_present(int sock, struct ds_tls *tls, const char *where, const char *name);

#endif
