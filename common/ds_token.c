#include "ds_token.h"

#include "ds_error.h"
#include "ds_preface.h"

#include <string.h>

#define BLANKS " \t\r\n\v\f"

int ds_token_line(char *line, char **token, char **prefix)
{
    char *hash = strchr(line, '#'), *rest;

    if (hash != NULL)
        *hash = '\0';
    *token = strtok_r(line, BLANKS, &rest);
    if (*token == NULL)
        return 0;
    *prefix = strtok_r(NULL, BLANKS, &rest);
    if (strlen(*token) > DS_TOKEN_MAX ||
        (*prefix != NULL && strlen(*prefix) > DS_NAME_MAX) ||
        strtok_r(NULL, BLANKS, &rest) != NULL)
        return DS_EINVAL;
    return 1;
}
