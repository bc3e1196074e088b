/*
 * Token files, as the server's --token-file and the tenant's DETSHARE_TOKEN_FILE hold
 * them: one token per line, optionally followed by whitespace and the tenant-name prefix
 * that token may be used with; a '#' at the start of a line or after a blank starts a
 * comment (one inside a token or prefix is part of it); blank lines say nothing.
 */
#ifndef DS_TOKEN_H
#define DS_TOKEN_H

/* Split one line (modified in place) into its token and prefix (NULL when it has
 * none).  Returns 1 for a token, 0 for a blank or comment line, DS_EINVAL when the
 * token is longer than DS_TOKEN_MAX, the prefix longer than a tenant name, or more
 * follows the prefix. */
int ds_token_line(char *line, char **token, char **prefix);

#endif
