#pragma once
// Linux calls that Glibc's module map hides behind _GNU_SOURCE, spelled out with syscall(2).
#include <sys/syscall.h>
#include <unistd.h>

// The cores a process (0: this thread) may run on (its affinity: taskset, systemd's CPUAffinity=),
// counted from the kernel's mask; 0 when the call fails. The raw call returns the bytes it wrote.
static inline int voicebox_affinity_cores(pid_t pid) {
    unsigned long mask[16] = { 0 };  // 1,024 cores
    long written = syscall(__NR_sched_getaffinity, pid, sizeof mask, mask);
    if (written <= 0) return 0;
    int count = 0;
    for (long word = 0; word < written / (long)sizeof mask[0]; word++) count += __builtin_popcountl(mask[word]);
    return count;
}
