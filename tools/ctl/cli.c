/*
 * cli.c - s3cachectl's command line (see ctl.h): one table describes every
 * option (its flag, type, bounds, which subcommands take it, its --help
 * line); the checks that span options and arguments follow it.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

enum opt_type {
    OPT_FLAG,    /* bool set to true */
    OPT_ON,      /* tri-state int set to 1 */
    OPT_OFF,     /* tri-state int set to 0 */
    OPT_STR,     /* const char *, at least min bytes */
    OPT_UINT,    /* uint64_t in min..max */
    OPT_SECONDS, /* double in min..max */
};

struct opt {
    const char *flag; /* without the leading "--" */
    const char *arg;  /* argument name for --help; NULL for flags */
    enum opt_type type;
    size_t offset; /* into struct ctl_args */
    uint64_t min, max;
    unsigned cmds; /* the subcommands taking it (CMD bits), or GLOBAL */
    const char *help;
};

#define OFF(field) offsetof(struct ctl_args, field)
#define CMD(c)     (1u << (c))
#define GLOBAL     (~0u)
#define WARM       CMD(CTL_CMD_WARM)
#define WATCHING   (CMD(CTL_CMD_WARM) | CMD(CTL_CMD_SHOW))
#define JSON_OUT                                                                                   \
    (CMD(CTL_CMD_STATUS) | CMD(CTL_CMD_MANIFESTS) | CMD(CTL_CMD_SHOW) | CMD(CTL_CMD_CANCEL) |      \
     CMD(CTL_CMD_ORDER) | CMD(CTL_CMD_IMPORTANCE))
#define MAX_POSITIONAL 8
#define HELP_COL       26 /* where an option's help text starts */
#define HELP_WIDTH     80

static const struct opt options[] = {
    {"prefix", "S3URI", OPT_STR, OFF(prefix), 0, 0, WARM,
     "warm every object under s3://BUCKET/PREFIX (or PREFIX with --bucket)"},
    {"keys-from", "FILE", OPT_STR, OFF(keys_from), 1, 0, WARM,
     "warm the keys in FILE, one per line (\"-\" is stdin): KEY with --bucket, or s3://BUCKET/KEY"},
    {"bucket", "NAME", OPT_STR, OFF(bucket), 1, 0, WARM,
     "the bucket of --keys-from or a bare --prefix"},
    {"epochs", "N", OPT_UINT, OFF(epochs), 1, 1000, WARM, "epochs to plan (default 1)"},
    {"shuffle", NULL, OPT_ON, OFF(shuffle), 0, 0, WARM, "shuffle each epoch like the trainer"},
    {"no-shuffle", NULL, OPT_OFF, OFF(shuffle), 0, 0, WARM, "keep the dataset order (the default)"},
    {"seed", "S", OPT_UINT, OFF(seed), 0, INT64_MAX, WARM,
     "the shuffle seed, epoch e uses S + e (default 0)"},
    {"world-size", "W", OPT_UINT, OFF(world_size), 1, 1000000, WARM,
     "ranks of a distributed job (default 1)"},
    {"rank", "R", OPT_UINT, OFF(rank), 0, 999999, WARM, "the rank this gateway serves (default 0)"},
    {"drop-last", NULL, OPT_ON, OFF(drop_last), 0, 0, WARM,
     "drop the tail instead of padding, like DistributedSampler"},
    {"no-drop-last", NULL, OPT_OFF, OFF(drop_last), 0, 0, WARM, "pad the tail (the default)"},
    {"name", "NAME", OPT_STR, OFF(name), 1, 0, WARM, "a label shown in listings"},
    {"no-wait", NULL, OPT_FLAG, OFF(no_wait), 0, 0, WARM, "print the manifest's id and return"},
    {"wait", NULL, OPT_FLAG, OFF(wait), 0, 0, CMD(CTL_CMD_SHOW),
     "follow the progress until the manifest is warm (like warm)"},
    {"wait-timeout", "SECONDS", OPT_SECONDS, OFF(wait_timeout), 0, 31536000, WATCHING,
     "stop waiting after this long, exit 7 (default 0: no limit)"},
    {"quiet", NULL, OPT_FLAG, OFF(quiet), 0, 0, WATCHING, "no progress lines, only the result"},
    {"epoch", "E", OPT_UINT, OFF(epoch), 0, 999, CMD(CTL_CMD_ORDER),
     "the epoch, 0-based (default 0)"},
    {"json", NULL, OPT_FLAG, OFF(json), 0, 0, JSON_OUT, "print the gateway's JSON reply"},
    {"endpoint-url", "URL", OPT_STR, OFF(endpoint_url), 0, 0, GLOBAL,
     "the gateway (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, http://localhost:8080)"},
    {"admin-token", "TOKEN", OPT_STR, OFF(admin_token), 0, 0, GLOBAL,
     "sent as \"Authorization: Bearer TOKEN\" (default $S3CACHED_ADMIN_TOKEN)"},
    {"timeout", "SECONDS", OPT_SECONDS, OFF(timeout), 0, 86400, GLOBAL,
     "give up on one request after this long (default 60; 0: no limit)"},
    {"no-verify-ssl", NULL, OPT_FLAG, OFF(no_verify_ssl), 0, 0, GLOBAL,
     "do not verify an https endpoint's certificate"},
    {"debug", NULL, OPT_FLAG, OFF(debug), 0, 0, GLOBAL,
     "print each request and reply status to stderr (never the token)"},
    {"help", NULL, OPT_FLAG, OFF(help), 0, 0, GLOBAL, "show help (for a command: CMD --help)"},
    {"version", NULL, OPT_FLAG, OFF(version), 0, 0, GLOBAL, "print the version"},
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static const char *const cmd_names[] = {
    [CTL_CMD_NONE] = "",         [CTL_CMD_WARM] = "warm",
    [CTL_CMD_STATUS] = "status", [CTL_CMD_MANIFESTS] = "manifests",
    [CTL_CMD_SHOW] = "show",     [CTL_CMD_CANCEL] = "cancel",
    [CTL_CMD_ORDER] = "order",   [CTL_CMD_IMPORTANCE] = "importance",
};

const char *ctl_cmd_name(enum ctl_cmd cmd)
{
    return (size_t)cmd < CTL_CMD_COUNT ? cmd_names[cmd] : "";
}

static enum ctl_cmd find_cmd(const char *name)
{
    for (int c = CTL_CMD_NONE + 1; c < CTL_CMD_COUNT; c++)
        if (strcmp(name, cmd_names[c]) == 0)
            return (enum ctl_cmd)c;
    return CTL_CMD_NONE;
}

/* The first word naming a command; only to point a usage error at the right --help. */
static enum ctl_cmd guess_cmd(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (find_cmd(argv[i]) != CTL_CMD_NONE)
            return find_cmd(argv[i]);
    return CTL_CMD_NONE;
}

static void set_defaults(struct ctl_args *a)
{
    memset(a, 0, sizeof(*a));
    a->timeout = 60;
    a->epochs = a->seed = a->world_size = a->rank = a->epoch = CTL_UNSET;
    a->shuffle = a->drop_last = -1;
}

/* ---- one option ------------------------------------------------------------- */

static bool parse_uint(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

static bool parse_seconds(const char *s, double *out)
{
    if ((*s < '0' || *s > '9') && *s != '.')
        return false;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static sc_code apply(struct ctl_args *a, const struct opt *o, const char *value, char *err,
                     size_t err_len)
{
    char *field = (char *)a + o->offset;
    uint64_t n;
    double d;
    switch (o->type) {
    case OPT_FLAG:
        *(bool *)field = true;
        return SC_OK;
    case OPT_ON:
    case OPT_OFF:
        *(int *)field = o->type == OPT_ON;
        return SC_OK;
    case OPT_STR:
        if (strlen(value) < o->min) {
            snprintf(err, err_len, "--%s needs a non-empty value", o->flag);
            return SC_EINVAL;
        }
        *(const char **)field = value;
        return SC_OK;
    case OPT_UINT:
        if (!parse_uint(value, &n) || n < o->min || n > o->max) {
            snprintf(err, err_len, "--%s must be an integer in %llu..%llu, not '%s'", o->flag,
                     (unsigned long long)o->min, (unsigned long long)o->max, value);
            return SC_EINVAL;
        }
        *(uint64_t *)field = n;
        return SC_OK;
    case OPT_SECONDS:
        if (!parse_seconds(value, &d) || d < (double)o->min || d > (double)o->max) {
            snprintf(err, err_len, "--%s must be a number of seconds in %llu..%llu, not '%s'",
                     o->flag, (unsigned long long)o->min, (unsigned long long)o->max, value);
            return SC_EINVAL;
        }
        *(double *)field = d;
        return SC_OK;
    }
    return SC_EINVAL;
}

static const struct opt *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strlen(options[i].flag) == len && strncmp(options[i].flag, name, len) == 0)
            return &options[i];
    return NULL;
}

/* Takes the option at argv[*i] (and its value, moving *i past it). */
static sc_code take_option(struct ctl_args *a, int argc, char **argv, int *i, bool *seen, char *err,
                           size_t err_len)
{
    const char *arg = argv[*i];
    if (strcmp(arg, "-h") == 0) {
        a->help = true;
        return SC_OK;
    }
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct opt *o = arg[1] == '-' ? find_option(name, len) : NULL;
    if (o == NULL) {
        snprintf(err, err_len, "unknown option '%.*s'",
                 (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
        return SC_EINVAL;
    }
    const char *value = NULL;
    if (o->arg != NULL && eq != NULL)
        value = eq + 1;
    else if (o->arg != NULL && *i + 1 < argc)
        value = argv[++*i];
    if ((o->arg != NULL && value == NULL) || (o->arg == NULL && eq != NULL)) {
        snprintf(err, err_len, "--%s %s", o->flag, o->arg ? "needs a value" : "takes no value");
        return SC_EINVAL;
    }
    seen[o - options] = true;
    return apply(a, o, value, err, err_len);
}

/* ---- whole-line checks ------------------------------------------------------ */

static sc_code check_options_apply(const struct ctl_args *a, const bool *seen, char *err,
                                   size_t err_len)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (!seen[i] || options[i].cmds == GLOBAL || (options[i].cmds & CMD(a->cmd)))
            continue;
        if (a->cmd == CTL_CMD_NONE)
            snprintf(err, err_len, "--%s needs a command before it", options[i].flag);
        else
            snprintf(err, err_len, "'%s' takes no --%s option", ctl_cmd_name(a->cmd),
                     options[i].flag);
        return SC_EINVAL;
    }
    return SC_OK;
}

static sc_code check_positionals(struct ctl_args *a, const char *const *pos, size_t n, char *err,
                                 size_t err_len)
{
    size_t want_min = 0, want_max = 0;
    const char *what = NULL;
    switch (a->cmd) {
    case CTL_CMD_WARM:
        want_max = 1;
        break;
    case CTL_CMD_IMPORTANCE:
        want_min = want_max = 1;
        what = "a losses FILE (or - for stdin)";
        break;
    case CTL_CMD_SHOW:
    case CTL_CMD_CANCEL:
    case CTL_CMD_ORDER:
        want_min = want_max = 1;
        what = "a manifest ID (see 's3cachectl manifests')";
        break;
    default:
        break;
    }
    if (n < want_min) {
        snprintf(err, err_len, "'%s' needs %s", ctl_cmd_name(a->cmd), what);
        return SC_EINVAL;
    }
    if (n > want_max) {
        snprintf(err, err_len, "unexpected argument '%s'", pos[want_max]);
        return SC_EINVAL;
    }
    if (n == 1 && (a->cmd == CTL_CMD_WARM || a->cmd == CTL_CMD_IMPORTANCE))
        a->input = pos[0];
    else if (n == 1)
        a->id = pos[0];
    return SC_OK;
}

static sc_code check_warm(const struct ctl_args *a, char *err, size_t err_len)
{
    int sources = (a->input != NULL) + (a->prefix != NULL) + (a->keys_from != NULL);
    char bucket[256];
    const char *prefix;
    if (sources == 0) {
        snprintf(err, err_len,
                 "'warm' needs a manifest FILE (or - for stdin), --prefix "
                 "s3://BUCKET/PREFIX or --keys-from FILE");
        return SC_EINVAL;
    }
    if (sources > 1) {
        snprintf(err, err_len, "give only one of a manifest FILE, --prefix and --keys-from");
        return SC_EINVAL;
    }
    if (a->prefix && strncmp(a->prefix, "s3://", 5) == 0) {
        if (ctl_s3_uri_parse(a->prefix, bucket, sizeof(bucket), &prefix) != SC_OK) {
            snprintf(err, err_len, "--prefix '%s' is not s3://BUCKET/PREFIX", a->prefix);
            return SC_EINVAL;
        }
        if (a->bucket && strcmp(a->bucket, bucket) != 0) {
            snprintf(err, err_len, "--bucket %s differs from the bucket of --prefix (%s)",
                     a->bucket, bucket);
            return SC_EINVAL;
        }
    } else if (a->prefix && a->bucket == NULL) {
        snprintf(err, err_len,
                 "--prefix takes s3://BUCKET/PREFIX (or a bare prefix with --bucket)");
        return SC_EINVAL;
    }
    if (a->rank != CTL_UNSET && a->world_size != CTL_UNSET && a->rank >= a->world_size) {
        snprintf(err, err_len, "--rank must be below --world-size (%llu)",
                 (unsigned long long)a->world_size);
        return SC_EINVAL;
    }
    return SC_OK;
}

/* Picks the command from the positionals ("help [CMD]" asks for help). */
static sc_code take_command(struct ctl_args *a, const char *const *pos, size_t *n, size_t *first,
                            char *err, size_t err_len)
{
    *first = 0;
    if (*n > 0 && strcmp(pos[0], "help") == 0) {
        a->help = true;
        *first = 1;
    }
    if (*first < *n) {
        a->cmd = find_cmd(pos[*first]);
        if (a->cmd == CTL_CMD_NONE) {
            snprintf(err, err_len, "unknown command '%s'", pos[*first]);
            return SC_EINVAL;
        }
        (*first)++;
    }
    *n -= *first;
    return SC_OK;
}

sc_code ctl_parse_args(int argc, char **argv, struct ctl_args *a, char *err, size_t err_len)
{
    const char *pos[MAX_POSITIONAL];
    bool seen[N_OPTIONS] = {false};
    bool options_end = false;
    size_t n = 0, first = 0;
    set_defaults(a);
    err[0] = '\0';
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_end && strcmp(arg, "--") == 0) {
            options_end = true;
        } else if (!options_end && arg[0] == '-' && arg[1] != '\0') {
            if (take_option(a, argc, argv, &i, seen, err, err_len) != SC_OK) {
                a->cmd = guess_cmd(argc, argv); /* for the "Try ... --help" line */
                return SC_EINVAL;
            }
        } else if (n == MAX_POSITIONAL) {
            snprintf(err, err_len, "unexpected argument '%s'", arg);
            return SC_EINVAL;
        } else {
            pos[n++] = arg;
        }
    }
    if (take_command(a, pos, &n, &first, err, err_len) != SC_OK)
        return SC_EINVAL;
    if (a->help || a->version)
        return SC_OK;
    if (check_options_apply(a, seen, err, err_len) != SC_OK ||
        check_positionals(a, pos + first, n, err, err_len) != SC_OK)
        return SC_EINVAL;
    if (a->cmd == CTL_CMD_SHOW && a->json && a->wait) {
        snprintf(err, err_len, "--json and --wait do not go together");
        return SC_EINVAL;
    }
    if (a->cmd == CTL_CMD_WARM)
        return check_warm(a, err, err_len);
    return SC_OK;
}

/* ---- help -------------------------------------------------------------------- */

/* Prints text from column HELP_COL, wrapped before column HELP_WIDTH. */
static void print_wrapped(FILE *to, const char *text)
{
    size_t col = HELP_COL;
    while (*text != '\0') {
        size_t word = strcspn(text, " ");
        if (col > HELP_COL && col + 1 + word > HELP_WIDTH) {
            fprintf(to, "\n%*s", HELP_COL, "");
            col = HELP_COL;
        } else if (col > HELP_COL) {
            fputc(' ', to);
            col++;
        }
        fprintf(to, "%.*s", (int)word, text);
        col += word;
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', to);
}

void ctl_print_options(FILE *to, enum ctl_cmd cmd)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct opt *o = &options[i];
        bool global = o->cmds == GLOBAL;
        if (cmd == CTL_CMD_NONE ? !global : global || !(o->cmds & CMD(cmd)))
            continue;
        char left[48];
        snprintf(left, sizeof(left), "--%s%s%s", o->flag, o->arg ? " " : "", o->arg ? o->arg : "");
        if (strlen(left) > HELP_COL - 4)
            fprintf(to, "  %s\n%*s", left, HELP_COL, "");
        else
            fprintf(to, "  %-*s  ", HELP_COL - 4, left);
        print_wrapped(to, o->help);
    }
}
