/* Random reads on the host, outside the probe (docs/probe.md, round 23).
 *
 *   gcc -O2 -o host_random scripts/host_random.c
 *   ./host_random sweep MIB          uniform random lines of a MIB buffer
 *   ./host_random mix BIG_MIB HOT_KIB P
 *                                    a share P of the reads within the first
 *                                    HOT_KIB of the buffer, the rest over all
 *                                    of it: how a core overlaps misses that
 *                                    are diluted among hits
 *   ./host_random spread MIB THP     MIB of lines, one a 4 KiB page (the
 *                                    line's place in its page moving
 *                                    with the page), THP 0 or 1: what a
 *                                    TLB entry covers
 *   ./host_random pause MIB IDLE_US  bursts of 200,000 reads separated by
 *                                    IDLE_US of work that touches no memory:
 *                                    what the L3 keeps of an idle set
 *
 * Buffers are 2 MiB aligned with MADV_HUGEPAGE, touched before timing;
 * each figure is the least ns a read of four (or three seconds of bursts).
 * The reads are 8 bytes at random word offsets, as the probe's
 * `mem::random_reads`: the generator is a splitmix64 with a multiply-high
 * reduction, the share test a conditional move, not a branch.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t *buffer_pages(size_t bytes, int huge) {
    size_t al = bytes + (2u << 20);
    char *p = mmap(0, al, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    char *b = (char *)(((uintptr_t)p + (2u << 20) - 1) & ~((uintptr_t)(2u << 20) - 1));
    madvise(b, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    memset(b, 1, bytes);
    return (uint64_t *)b;
}

static uint64_t *buffer(size_t bytes) { return buffer_pages(bytes, 1); }

static uint64_t state = 0x9E3779B97F4A7C15ull;
static inline uint64_t next(void) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline uint64_t below(uint64_t n) { return (uint64_t)(((unsigned __int128)next() * n) >> 64); }

/* ns a read, the least of four passes of n reads (the first a warm-up). */
static double timed(const uint64_t *b, uint64_t words, uint64_t hot, uint64_t thr, size_t n, uint64_t *sum) {
    double best = 1e9;
    for (int r = 0; r < 4; r++) {
        double t = now();
        for (size_t i = 0; i < n; i++) {
            uint64_t lim = next() < thr ? hot : words;
            *sum += b[below(lim)];
        }
        double d = (now() - t) / n * 1e9;
        if (r > 0 && d < best) best = d;
    }
    return best;
}

int main(int argc, char **argv) {
    uint64_t sum = 0;
    if (argc == 3 && !strcmp(argv[1], "sweep")) {
        size_t bytes = (size_t)atoi(argv[2]) << 20;
        uint64_t *b = buffer(bytes);
        printf("sweep %s MiB: %.2f ns a read\n", argv[2], timed(b, bytes / 8, 0, 0, 20000000, &sum));
    } else if (argc == 5 && !strcmp(argv[1], "mix")) {
        size_t bytes = (size_t)atoi(argv[2]) << 20, hot = (size_t)atoi(argv[3]) << 10;
        double p = atof(argv[4]);
        uint64_t thr = p >= 1.0 ? UINT64_MAX : (uint64_t)(p * 18446744073709551615.0);
        uint64_t *b = buffer(bytes);
        printf("mix %s MiB, %.4f of reads in %s KiB: %.2f ns a read\n", argv[2], p, argv[3],
               timed(b, bytes / 8, hot / 8, thr, 20000000, &sum));
    } else if (argc == 4 && !strcmp(argv[1], "spread")) {
        uint64_t lines = (uint64_t)atoi(argv[2]) << 14;
        char *b = (char *)buffer_pages(lines * 4160, atoi(argv[3]));
        double best = 1e9;
        for (int r = 0; r < 4; r++) {
            double t = now();
            for (int i = 0; i < 20000000; i++) {
                uint64_t k = below(lines);
                sum += *(uint64_t *)(b + k * 4096 + (k % 64) * 64);
            }
            double d = (now() - t) / 20000000 * 1e9;
            if (r > 0 && d < best) best = d;
        }
        printf("spread %s MiB of lines over %llu MiB, thp %s: %.2f ns a read\n", argv[2],
               (unsigned long long)(lines * 4096 >> 20), argv[3], best);
    } else if (argc == 4 && !strcmp(argv[1], "pause")) {
        size_t bytes = (size_t)atoi(argv[2]) << 20;
        double idle = atof(argv[3]) * 1e-6, busy = 0;
        uint64_t *b = buffer(bytes), words = bytes / 8;
        size_t reads = 0;
        timed(b, words, 0, 0, 5000000, &sum);
        for (double end = now() + 3.0; now() < end;) {
            double t = now();
            for (int i = 0; i < 200000; i++) sum += b[below(words)];
            busy += now() - t;
            reads += 200000;
            volatile uint64_t z = 0;
            for (double e = now() + idle; now() < e;)
                for (int k = 0; k < 100; k++) z += k;
        }
        printf("pause %s MiB, idle %s us: %.2f ns a read while busy\n", argv[2], argv[3], busy / reads * 1e9);
    } else {
        fprintf(stderr, "usage: %s sweep MIB | mix BIG_MIB HOT_KIB P | spread MIB THP | pause MIB IDLE_US\n", argv[0]);
        return 2;
    }
    return sum == 42;
}
