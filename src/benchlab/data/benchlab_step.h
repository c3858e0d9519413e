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
 * Counting mode (the test setting `count`, `benchlab compare --measure instructions`) runs the
 * program under valgrind's callgrind and counts only what runs inside BENCHLAB_COUNTED:
 *
 *     BENCHLAB_COUNTED(run_once());                         // one counted call
 *
 * Outside valgrind the macro costs a few instructions and runs the statement as it is.
 * The markers are valgrind's client requests, written here for x86-64 with GCC or Clang,
 * and on aarch64 a system call that benchlab's QEMU plugin counts between (an emulated ARM
 * core); elsewhere the statement simply runs (and benchlab says the program counted nothing).
 *
 * Compile with: cc -O2 -I"$(python -c 'import benchlab.protocol.step as s; print(s.include_dir())')" ...
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

/* valgrind's request numbers: callgrind's start at its tool base ('C','T' << 16). */
#define BENCHLAB_COUNT_DUMP 0x43540000ULL
#define BENCHLAB_COUNT_TOGGLE 0x43540002ULL
#define BENCHLAB_COUNT_START 0x43540004ULL

/* Issues one valgrind client request; returns 0 outside valgrind. The four rotations of
 * rdi add up to 128 bits (rdi is left as it was) and, with xchg rbx,rbx, are the marker
 * valgrind's translator replaces by the request; on a real CPU they do nothing. */
static inline unsigned long long benchlab_count_request(unsigned long long request)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    volatile unsigned long long args[6] = {request, 0, 0, 0, 0, 0};
    unsigned long long answer = 0;
    __asm__ volatile("rolq $3, %%rdi\n\trolq $13, %%rdi\n\t"
                     "rolq $61, %%rdi\n\trolq $51, %%rdi\n\txchgq %%rbx, %%rbx"
                     : "=d"(answer)
                     : "a"(&args[0]), "0"(answer)
                     : "cc", "memory");
    return answer;
#else
    (void)request;
    return 0;
#endif
}

/* The mark an emulated ARM core's counter sees (benchlab's QEMU plugin, qemu_count.c): a
 * system call no kernel has (ENOSYS everywhere), 1 to begin a counted call, 2 to end it. */
#define BENCHLAB_COUNT_SYSCALL 48716L
static inline void benchlab_count_mark(long what)
{
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
    register long x8 __asm__("x8") = BENCHLAB_COUNT_SYSCALL;
    register long x0 __asm__("x0") = what;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8) : "memory");
#else
    (void)what;
#endif
}

/* Runs `statement` as one counted call: under valgrind, collection on around it alone, then
 * one dump; on an emulated ARM core, between a begin and an end mark. */
#define BENCHLAB_COUNTED(statement)                     \
    do {                                                \
        benchlab_count_request(BENCHLAB_COUNT_START);   \
        benchlab_count_request(BENCHLAB_COUNT_TOGGLE);  \
        benchlab_count_mark(1);                         \
        statement;                                      \
        benchlab_count_mark(2);                         \
        benchlab_count_request(BENCHLAB_COUNT_TOGGLE);  \
        benchlab_count_request(BENCHLAB_COUNT_DUMP);    \
    } while (0)

#endif /* BENCHLAB_STEP_H */
