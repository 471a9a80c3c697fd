/*
 * trace.c - the simulator's access trace: building one, and reading one from
 * a file ("key" or "key size" per line), with keys interned to objects
 * through an open-addressing table of object indices.
 */
#include "sim.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/hash.h"

#define MIN_CAP 1024u
#define NO_OBJ  UINT32_MAX

void sim_trace_free(struct sim_trace *t)
{
    for (uint32_t i = 0; i < t->n_objs; i++)
        free(t->objs[i].key);
    free(t->objs);
    free(t->acc);
    free(t->loss);
    *t = (struct sim_trace){0};
}

sc_code sim_trace_add_object(struct sim_trace *t, const char *key, uint64_t size, uint32_t *idx)
{
    if (t->n_objs == NO_OBJ - 1)
        return SC_ETOOBIG;
    if (t->n_objs == t->cap_objs) {
        uint32_t cap = t->cap_objs ? t->cap_objs * 2 : MIN_CAP;
        if (cap < t->cap_objs || cap > NO_OBJ - 1)
            cap = NO_OBJ - 1;
        struct sim_object *objs = realloc(t->objs, (size_t)cap * sizeof(*objs));
        if (objs == NULL)
            return SC_ENOMEM;
        t->objs = objs;
        t->cap_objs = cap;
    }
    char *copy = strdup(key);
    if (copy == NULL)
        return SC_ENOMEM;
    t->objs[t->n_objs] = (struct sim_object){.key = copy, .size = size};
    *idx = t->n_objs++;
    return SC_OK;
}

sc_code sim_trace_add_access(struct sim_trace *t, uint32_t obj, double loss)
{
    if (t->n_acc == t->cap_acc) {
        uint64_t cap = t->cap_acc ? t->cap_acc * 2 : MIN_CAP;
        uint32_t *acc = realloc(t->acc, cap * sizeof(*acc));
        if (acc == NULL)
            return SC_ENOMEM;
        t->acc = acc;
        if (t->loss != NULL) {
            double *l = realloc(t->loss, cap * sizeof(*l));
            if (l == NULL)
                return SC_ENOMEM;
            t->loss = l;
        }
        t->cap_acc = cap;
    }
    if (t->loss != NULL)
        t->loss[t->n_acc] = loss;
    t->acc[t->n_acc++] = obj;
    return SC_OK;
}

uint64_t sim_trace_bytes(const struct sim_trace *t)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < t->n_objs; i++)
        sum += t->objs[i].size;
    return sum;
}

bool sim_trace_equal_sizes(const struct sim_trace *t)
{
    for (uint32_t i = 1; i < t->n_objs; i++)
        if (t->objs[i].size != t->objs[0].size)
            return false;
    return true;
}

/* Interning: key -> object index. */
struct names {
    uint32_t *slots; /* object index, or NO_OBJ */
    size_t n_slots;  /* a power of two, kept at least twice the objects */
};

static size_t name_slot(const struct names *nm, const struct sim_trace *t, const char *key)
{
    size_t mask = nm->n_slots - 1, i = (size_t)sc_bytes_hash(key, strlen(key)) & mask;
    while (nm->slots[i] != NO_OBJ && strcmp(t->objs[nm->slots[i]].key, key) != 0)
        i = (i + 1) & mask;
    return i;
}

static sc_code names_grow(struct names *nm, const struct sim_trace *t)
{
    size_t n = nm->n_slots ? nm->n_slots * 2 : MIN_CAP;
    uint32_t *slots = malloc(n * sizeof(*slots));
    if (slots == NULL)
        return SC_ENOMEM;
    memset(slots, 0xff, n * sizeof(*slots));
    free(nm->slots);
    nm->slots = slots;
    nm->n_slots = n;
    for (uint32_t i = 0; i < t->n_objs; i++)
        nm->slots[name_slot(nm, t, t->objs[i].key)] = i;
    return SC_OK;
}

/* Splits line into key and optional size; returns SC_EINVAL for junk after them. */
static sc_code parse_line(char *line, char **key, uint64_t *size, bool *has_size)
{
    char *save = NULL;
    *key = strtok_r(line, " \t\r\n", &save);
    char *sz = *key ? strtok_r(NULL, " \t\r\n", &save) : NULL;
    *has_size = sz != NULL;
    if (sz == NULL)
        return SC_OK;
    if (strtok_r(NULL, " \t\r\n", &save) != NULL || !isdigit((unsigned char)*sz))
        return SC_EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(sz, &end, 10);
    if (errno != 0 || *end != '\0')
        return SC_EINVAL;
    *size = v;
    return SC_OK;
}

/* Adds one access to key, creating its object on first sight. */
static sc_code add_named(struct sim_trace *t, struct names *nm, const char *key, uint64_t size)
{
    if ((t->n_objs + 1) * 2 > nm->n_slots && names_grow(nm, t) != SC_OK)
        return SC_ENOMEM;
    size_t slot = name_slot(nm, t, key);
    uint32_t obj = nm->slots[slot];
    if (obj == NO_OBJ) {
        sc_code rc = sim_trace_add_object(t, key, size, &obj);
        if (rc != SC_OK)
            return rc;
        nm->slots[slot] = obj;
    }
    return sim_trace_add_access(t, obj, 0.0);
}

sc_code sim_trace_read(FILE *in, uint64_t default_size, struct sim_trace *t, uint64_t *line)
{
    sc_code rc = SC_OK;
    struct names nm = {0};
    char *buf = NULL;
    size_t cap = 0;
    *t = (struct sim_trace){.planned = true};
    *line = 0;
    while (getline(&buf, &cap, in) >= 0) {
        ++*line;
        char *key = NULL, *p = buf + strspn(buf, " \t\r\n");
        uint64_t size = default_size;
        bool has_size = false;
        if (*p == '\0' || *p == '#')
            continue;
        rc = parse_line(p, &key, &size, &has_size);
        if (rc != SC_OK)
            goto out;
        rc = add_named(t, &nm, key, size);
        if (rc != SC_OK)
            goto out;
    }
out:
    free(buf);
    free(nm.slots);
    if (rc != SC_OK)
        sim_trace_free(t);
    return rc;
}
