/*
 * A measured C program that counting mode can count: each timed call is also a counted call.
 *
 *     cc -O2 -std=c99 -I"$(python -c 'import benchlab.protocol.step as s; print(s.include_dir())')" \
 *        examples/count/dot.c -o dot
 *     python -m benchlab.runner.count instructions -- ./dot --n 100000 --iter 3
 *
 * Natively it prints one latency metric line per call; under `benchlab.runner.count` each
 * call's executed instructions are printed as well (docs/statistics.md, "Counted
 * instructions").
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchlab_step.h"

static volatile double sink;

/* The measured work: a dot product of length n, computed in a way the compiler keeps. */
static void dot(long n)
{
    double total = 0.0;
    for (long i = 0; i < n; i++) {
        total += (double)i * (double)(n - i);
    }
    sink = total;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    long n = 100000;
    int iterations = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0) {
            n = atol(argv[i + 1]);
        } else if (strcmp(argv[i], "--iter") == 0) {
            iterations = atoi(argv[i + 1]);
        }
    }
    dot(n); /* warm-up */
    for (int i = 0; i < iterations; i++) {
        double start = now_ms();
        BENCHLAB_COUNTED(dot(n));
        printf("BENCHLAB_METRIC {\"type\":\"NET\",\"metric\":\"latency\",\"unit\":\"ms\","
               "\"value\":%.6f}\n", now_ms() - start);
    }
    return 0;
}
