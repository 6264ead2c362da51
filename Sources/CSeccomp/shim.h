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
