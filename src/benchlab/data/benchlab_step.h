/*
 * benchlab_step.h: the step protocol for C and C++ benchmarks (benchlab docs/ab.md,
 * "The step protocol"). Header only, C99, standard library only.
 *
 * With BENCHLAB_STEP set (to anything but empty or "0"), `benchlab compare` runs the
 * program one timed iteration at a time: after its setup the program prints
 * "BENCHLAB_STEP ready", then runs one iteration per line it reads on stdin, printing that
 * iteration's metric line on stdout, until the line "stop" or the end of stdin.
 *
 *     #include "benchlab_step.h"
 *
 *     for (int i = 0; i < warmup; i++) run_once();          // your own warm-up, if any
 *     if (benchlab_step_begin()) {                          // step mode: ready printed
 *         while (benchlab_step_next()) time_and_print_one();
 *     } else {
 *         for (int i = 0; i < iterations; i++) time_and_print_one();
 *     }
 *
 * benchlab_step_next() flushes stdout before it waits, so the metric line printed by the
 * previous iteration reaches benchlab without an fflush of your own.
 *
 * Compile with: cc -O2 -I"$(python -c 'import benchlab.step as s; print(s.include_dir())')" ...
 */
#ifndef BENCHLAB_STEP_H
#define BENCHLAB_STEP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCHLAB_STEP_ENV "BENCHLAB_STEP"
#define BENCHLAB_STEP_READY "BENCHLAB_STEP ready"
#define BENCHLAB_STEP_STOP "stop"

/* 1 when the program was started in step mode, else 0. */
static inline int benchlab_step_enabled(void)
{
    const char *value = getenv(BENCHLAB_STEP_ENV);
    return value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

/* Call once after setup and warm-up: in step mode prints the ready line and returns 1;
 * otherwise prints nothing and returns 0 (run your own iteration loop). */
static inline int benchlab_step_begin(void)
{
    if (!benchlab_step_enabled()) {
        return 0;
    }
    fputs(BENCHLAB_STEP_READY "\n", stdout);
    fflush(stdout);
    return 1;
}

/* Flushes stdout, then waits for benchlab's next line: 1 means run exactly one timed
 * iteration and print its metric line; 0 means stop (the line "stop", or end of stdin). */
static inline int benchlab_step_next(void)
{
    char line[256];
    size_t start = 0;
    size_t end;
    int c;

    fflush(stdout);
    if (fgets(line, (int)sizeof line, stdin) == NULL) {
        return 0;
    }
    end = strlen(line);
    if (end > 0 && line[end - 1] != '\n') {
        /* A longer line than the buffer: drop the rest of it. */
        while ((c = getchar()) != EOF && c != '\n') {
        }
    }
    while (end > start && strchr(" \t\r\n", line[end - 1]) != NULL) {
        end--;
    }
    while (start < end && strchr(" \t", line[start]) != NULL) {
        start++;
    }
    line[end] = '\0';
    return strcmp(line + start, BENCHLAB_STEP_STOP) != 0;
}

#endif /* BENCHLAB_STEP_H */
