/*
 * table.c - aligned text columns for s3cachectl's listings (see ctl.h).
 * Widths count characters, not bytes, so UTF-8 names line up.
 */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define CELL_MAX 1024 /* bytes of one cell kept */

void ctl_table_init(struct ctl_table *t, size_t cols, const char *align)
{
    memset(t, 0, sizeof(*t));
    t->cols = cols;
    t->align = align;
}

sc_code ctl_table_add(struct ctl_table *t, const char *const *cells)
{
    if (t->rows == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, cap * t->cols * sizeof(*grown));
        if (grown == NULL)
            return SC_ENOMEM;
        t->cells = grown;
        t->cap = cap;
    }
    char buf[CELL_MAX];
    char **row = t->cells + t->rows * t->cols;
    for (size_t i = 0; i < t->cols; i++) {
        const char *cell = cells[i] != NULL && cells[i][0] != '\0' ? cells[i] : "-";
        row[i] = strdup(prog_sanitize(buf, sizeof(buf), cell));
        if (row[i] == NULL) {
            while (i > 0)
                free(row[--i]);
            return SC_ENOMEM;
        }
    }
    t->rows++;
    return SC_OK;
}

static void pad(FILE *to, size_t n)
{
    while (n-- > 0)
        fputc(' ', to);
}

void ctl_table_print(const struct ctl_table *t, FILE *to)
{
    size_t *widths = calloc(t->cols ? t->cols : 1, sizeof(*widths));
    if (widths == NULL)
        return;
    for (size_t r = 0; r < t->rows; r++)
        for (size_t c = 0; c < t->cols; c++) {
            size_t w = prog_width(t->cells[r * t->cols + c]);
            widths[c] = w > widths[c] ? w : widths[c];
        }
    for (size_t r = 0; r < t->rows; r++) {
        for (size_t c = 0; c < t->cols; c++) {
            const char *cell = t->cells[r * t->cols + c];
            size_t gap = widths[c] - prog_width(cell);
            bool right = t->align != NULL && t->align[c] == 'r';
            bool last = c + 1 == t->cols;
            if (c > 0)
                fputs("  ", to);
            if (right)
                pad(to, gap);
            fputs(cell, to);
            if (!right && !last)
                pad(to, gap);
        }
        fputc('\n', to);
    }
    free(widths);
}

void ctl_table_free(struct ctl_table *t)
{
    for (size_t i = 0; i < t->rows * t->cols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}
