#pragma once
#include <seccomp.h>
#include <sys/prctl.h>

// SCMP_A1 and friends are variadic-looking macros Swift cannot import: one comparison, spelled out.
static inline struct scmp_arg_cmp voicebox_masked_argument(unsigned int argument, scmp_datum_t mask, scmp_datum_t value) {
    struct scmp_arg_cmp comparison = { argument, SCMP_CMP_MASKED_EQ, mask, value };
    return comparison;
}

// prctl is variadic in C: the two-argument calls a worker makes.
static inline int voicebox_prctl(int option, unsigned long argument) {
    return prctl(option, argument, 0UL, 0UL, 0UL);
}

// SCMP_ACT_ERRNO is a function-like macro.
static inline uint32_t voicebox_act_errno(uint16_t code) {
    return SCMP_ACT_ERRNO(code);
}

#include <linux/io_uring.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// syscall(2) and ptrace(2) are variadic: the calls the confinement probe tries, spelled out.
static inline long voicebox_io_uring_setup(void) {
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    return syscall(__NR_io_uring_setup, 4, &params);
}

static inline long voicebox_ptrace_attach(pid_t pid) {
    return syscall(__NR_ptrace, 16 /* PTRACE_ATTACH */, pid, 0, 0);
}

// ioctl(2) is variadic; the request passed whole, high bits included, as a hostile caller would.
static inline long voicebox_ioctl(int fd, unsigned long request, void *argument) {
    return syscall(__NR_ioctl, fd, request, argument);
}
