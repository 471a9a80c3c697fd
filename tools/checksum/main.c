/*
 * main.c - s3cached-checksum: the x-amz-checksum-crc64nvme of files, as S3 would send it.
 *
 *   s3cached-checksum FILE...   one line per file: the base64 of the big-endian CRC-64/NVME,
 *                               two spaces, the file's name (md5sum's layout)
 *
 * bench/lib/cloud.sh uses it to give the emulated cloud the checksum S3 keeps for every object
 * written since December 2024 (CLOUD_CHECKSUMS=crc64nvme). Exit status 1 if a file cannot
 * be read.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "../../common/crc64nvme.h"

/* The base64 of the 8 big-endian bytes of v, as S3 spells it (12 characters and a NUL). */
static void base64_be64(uint64_t v, char out[13])
{
    unsigned char raw[8];
    for (int i = 0; i < 8; i++)
        raw[i] = (unsigned char)(v >> (56 - 8 * i));
    EVP_EncodeBlock((unsigned char *)out, raw, (int)sizeof(raw));
}

static int sum_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "s3cached-checksum: %s: %s\n", path, strerror(errno));
        return 1;
    }
    static unsigned char buf[1 << 20];
    uint64_t crc = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        crc = crc64nvme(crc, buf, n);
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        fprintf(stderr, "s3cached-checksum: %s: read error\n", path);
        return 1;
    }
    char text[13];
    base64_be64(crc, text);
    printf("%s  %s\n", text, path);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: s3cached-checksum FILE...\n");
        return 2;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= sum_file(argv[i]);
    return rc;
}
