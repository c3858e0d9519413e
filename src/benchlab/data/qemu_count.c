/*
 * qemu_count.c: a QEMU TCG plugin that counts the guest instructions executed between the
 * marks a program makes (benchlab docs/statistics.md, "Counted instructions on an emulated
 * ARM core"). benchlab builds it with the host's C compiler and loads it into QEMU's user-mode
 * emulator:  qemu-aarch64 -cpu cortex-a53 -plugin libqemu_count.so,out=FILE PROGRAM...
 *
 * A program marks a counted call with the system call BENCHLAB_COUNT_SYSCALL (no kernel has
 * it; QEMU answers ENOSYS): argument 1 begins a counted call, 2 ends it. At each end the
 * instructions executed since the begin are appended to FILE, one line per call. Counting is
 * per translation block, added when the block starts: a block that leaves early through a
 * fault would be counted whole (none does in a measured call).
 *
 * The declarations below are the few functions of QEMU's plugin interface (version 1, QEMU
 * 5.0 to 8.1) that this plugin uses, written out so that no QEMU header is needed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BENCHLAB_COUNT_SYSCALL 48716 /* 0xBE4C */

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*syscall_cb)(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                           uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                           uint64_t a7, uint64_t a8);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);
enum { INLINE_ADD_U64 = 0 };

extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op,
                                                     void *ptr, uint64_t imm);
extern void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, syscall_cb cb);
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t executed;  /* every instruction so far (one guest thread is measured) */
static uint64_t begun;
static FILE *out;

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &executed,
                                             qemu_plugin_tb_n_insns(tb));
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                       uint64_t a7, uint64_t a8)
{
    (void)id; (void)vcpu; (void)a2; (void)a3; (void)a4; (void)a5; (void)a6; (void)a7;
    (void)a8;
    if (num != BENCHLAB_COUNT_SYSCALL) {
        return;
    }
    if (a1 == 1) {
        begun = executed;
    } else if (a1 == 2 && out != NULL) {
        fprintf(out, "%llu\n", (unsigned long long)(executed - begun));
        fflush(out);
    }
}

static void on_exit_(qemu_plugin_id_t id, void *userdata)
{
    (void)id; (void)userdata;
    if (out != NULL) {
        fclose(out);
        out = NULL;
    }
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            out = fopen(argv[i] + 4, "w");
        }
    }
    if (out == NULL) {
        fprintf(stderr, "qemu_count: give out=FILE, a file it can write\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_atexit_cb(id, on_exit_, NULL);
    return 0;
}
