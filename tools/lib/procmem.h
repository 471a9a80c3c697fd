/*
 * procmem.h - what this process holds in memory, for the measuring tools (plan-bench,
 * s3cached-memfill). Header only: each tool is one program with no library of its own.
 */
#ifndef TOOLS_PROCMEM_H
#define TOOLS_PROCMEM_H

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes malloc holds for live allocations now (its own overhead included). */
static inline uint64_t procmem_heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
}

/* A field of /proc/self/status ("VmRSS", "VmHWM", "RssAnon", ...) in bytes, or 0. */
static inline uint64_t procmem_status_bytes(const char *field)
{
    char line[256];
    uint64_t kb = 0;
    size_t n = strlen(field);
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':')
            kb = strtoull(line + n + 1, NULL, 10);
    fclose(f);
    return kb * 1024;
}

#endif
