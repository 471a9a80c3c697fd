/*
 * planbench.h - plan-bench (bench/plans.sh): how long a large manifest takes to parse and
 * register, and how much memory its plan and the structures a registered manifest keeps
 * take per key. The pieces main.c puts together.
 */
#ifndef PLANBENCH_H
#define PLANBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/buf.h"
#include "../../common/sc_err.h"

#define PB_KEY_CAP 64 /* bytes of a generated key and its NUL */

enum pb_form { PB_KEYS, PB_EPOCHS, PB_PREFIX };

struct pb_opts {
    enum pb_form form;
    uint32_t keys;       /* distinct keys (per epoch for PB_EPOCHS) */
    uint32_t epochs;     /* num_epochs, or lists of PB_EPOCHS */
    uint32_t world_size; /* the plan is rank 0's */
    bool shuffle;
    bool unsorted;   /* PB_KEYS: the keys in the body in a random order, not ascending */
    bool print_body; /* write the body to stdout, measure nothing */
    uint64_t seed;
};

/* @brief Key i of n: "train/n<class>/<file>.JPEG", ascending by bytes as i grows. */
void pb_key(uint32_t i, uint32_t n, char *out, size_t cap);

/*
 * @brief The POST body of o's manifest into b (a PB_PREFIX body names the prefix only; its
 * keys come from pb_key as a listing would return them).
 * @return SC_OK or SC_ENOMEM.
 */
sc_code pb_body(const struct pb_opts *o, struct sc_buf *b);

#endif
