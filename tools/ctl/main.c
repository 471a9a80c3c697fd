/* main.c - s3cachectl: the command line for the admin API (placeholder until it lands). */
#include <stdio.h>

int main(void)
{
    fputs("s3cachectl: not built yet\n", stderr);
    return 2;
}
