/* The timing floor of a CPU: how often, how long and how regularly a thread
 * that never sleeps loses the CPU (host preemption of a vCPU, the guest's
 * own tick, interrupts). Every pacing tool on this CPU inherits these
 * stalls, so they bound what any p99 / p99.9 measurement can show.
 *
 * Usage: vmnoise SECONDS THRESHOLD_NS
 * Prints one JSON line: stalls above the threshold, their total, a size
 * histogram and the most common spacing between stalls.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#define MAX_EVENTS 1000000
static uint64_t at[MAX_EVENTS], len[MAX_EVENTS];

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: vmnoise SECONDS THRESHOLD_NS\n");
        return 2;
    }
    double secs = atof(argv[1]);
    uint64_t thr = strtoull(argv[2], NULL, 10);
    uint64_t t0 = now_ns(), prev = t0, end = t0 + (uint64_t)(secs * 1e9);
    size_t n = 0;
    uint64_t lost = 0;
    for (;;) {
        uint64_t t = now_ns();
        if (t - prev > thr) {
            if (n < MAX_EVENTS) {
                at[n] = prev - t0;
                len[n] = t - prev;
            }
            n++;
            lost += t - prev;
        }
        prev = t;
        if (t > end) break;
    }
    /* size histogram, µs buckets */
    const uint64_t edges[] = {10000, 20000, 50000, 100000, 500000, 1000000};
    size_t hist[7] = {0};
    uint64_t max = 0;
    size_t m = n < MAX_EVENTS ? n : MAX_EVENTS;
    for (size_t i = 0; i < m; i++) {
        size_t b = 0;
        while (b < 6 && len[i] >= edges[b]) b++;
        hist[b]++;
        if (len[i] > max) max = len[i];
    }
    /* most common spacing between consecutive stalls, in 0.1 ms bins up to 20 ms */
    size_t bins[201] = {0};
    for (size_t i = 1; i < m; i++) {
        uint64_t d = (at[i] - at[i - 1] + 50000) / 100000;
        if (d <= 200) bins[d]++;
    }
    size_t best = 1;
    for (size_t i = 1; i <= 200; i++)
        if (bins[i] > bins[best]) best = i;
    double wall = (double)(prev - t0);
    printf("{\"seconds\": %.3f, \"threshold_ns\": %llu, \"stalls\": %zu, \"stalls_per_s\": %.1f, "
           "\"lost_fraction\": %.5f, \"max_ns\": %llu, "
           "\"hist_us\": {\"<10\": %zu, \"10-20\": %zu, \"20-50\": %zu, \"50-100\": %zu, "
           "\"100-500\": %zu, \"500-1000\": %zu, \">=1000\": %zu}, "
           "\"common_spacing_ms\": %.1f, \"spacing_share\": %.3f}\n",
           wall / 1e9, (unsigned long long)thr, n, n / (wall / 1e9), lost / wall,
           (unsigned long long)max, hist[0], hist[1], hist[2], hist[3], hist[4], hist[5], hist[6],
           best / 10.0, m > 1 ? (double)bins[best] / (double)(m - 1) : 0.0);
    return 0;
}
