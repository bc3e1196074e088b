#include "ds_token.h"

#include "ds_error.h"
#include "ds_preface.h"

#include <string.h>

#define BLANKS " \t\r\n\v\f"

/* Cut line at its comment: a '#' that starts it or follows a blank.  One inside a word
 * belongs to the word, so that a token holding '#' is not silently cut short. */
static void drop_comment(char *line)
{
    for (char *p = line; *p != '\0'; p++)
        if (*p == '#' && (p == line || strchr(BLANKS, p[-1]) != NULL)) {
            *p = '\0';
            return;
        }
}

int ds_token_line(char *line, char **token, char **prefix)
{
    char *rest;

    drop_comment(line);
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
