/*
 * spin.c: a compiled benchmark "build" with a calibrated slowdown knob, for A/B comparisons
 * (the C twin of spin.py). Each iteration runs a fixed chain of integer work (WORK steps
 * scaled by --slowdown), timed with clock_gettime(CLOCK_MONOTONIC), and prints
 *
 *     BENCHLAB_METRIC {"type":"NET","metric":"latency","unit":"us","value":...}
 *
 * It speaks benchlab's step protocol through benchlab_step.h (docs/ab.md): with
 * BENCHLAB_STEP=1 it warms up, prints "BENCHLAB_STEP ready" and runs one timed iteration per
 * line on stdin. Build (see examples/ab/README.md):
 *
 *     cc -O2 -std=c99 -I"$(python -c 'import benchlab.protocol.step as s; print(s.include_dir())')" \
 *         examples/ab/spin.c -o spin
 *
 * Usage: spin [--warmup N] [--iter N] [--slowdown X] [--work N]   (X = 0.05: 5% more work)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchlab_step.h"

/* A millisecond or two per iteration on a current x86-64 core at -O2. */
#define WORK 1000000L

static volatile uint64_t sink;

/* A serial chain of multiply and xor-shift: neither vectorised nor folded by the compiler. */
static void spin(long steps)
{
    uint64_t x = (uint64_t)steps;
    for (long i = 0; i < steps; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        x ^= x >> 29;
    }
    sink = x;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void timed_iteration(long steps)
{
    double start = now_us();
    spin(steps);
    double elapsed = now_us() - start;
    printf("BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"us\","
           "\"value\":%.3f}\n", elapsed);
}

static int usage(const char *program)
{
    fprintf(stderr, "usage: %s [--warmup N] [--iter N] [--slowdown X] [--work N]\n", program);
    return 2;
}

int main(int argc, char **argv)
{
    long warmup = 3;
    long iterations = 30;
    long work = WORK;
    double slowdown = 0.0;

    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) {
            return usage(argv[0]);
        }
        if (strcmp(argv[i], "--warmup") == 0) {
            warmup = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--iter") == 0) {
            iterations = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--slowdown") == 0) {
            slowdown = strtod(argv[++i], NULL);
        } else if (strcmp(argv[i], "--work") == 0) {
            work = strtol(argv[++i], NULL, 10);
        } else {
            return usage(argv[0]);
        }
    }
    long steps = (long)((double)work * (1.0 + slowdown));

    for (long i = 0; i < warmup; i++) {
        spin(steps);
    }
    if (benchlab_step_begin()) {
        while (benchlab_step_next()) {
            timed_iteration(steps);
        }
    } else {
        for (long i = 0; i < iterations; i++) {
            timed_iteration(steps);
        }
    }
    return 0;
}
