/* main.c - s3cached-sim: replays an access trace through the policies (placeholder until it lands).
 */
#include <stdio.h>

int main(void)
{
    fputs("s3cached-sim: not built yet\n", stderr);
    return 2;
}
