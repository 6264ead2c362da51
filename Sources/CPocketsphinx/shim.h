#pragma once
#include <stdarg.h>
#include <stdio.h>
#include <pocketsphinx.h>
#include <sphinxbase/err.h>
#include <sphinxbase/fsg_model.h>
#include <sphinxbase/jsgf.h>
#include <sphinxbase/logmath.h>

/* sphinxbase logs through a C-variadic callback, which Swift cannot implement. This trampoline
 * formats each message and hands it to a plain function that Swift can provide. */
typedef void (*voicebox_sphinx_log_fn)(int level, const char *message);

static void voicebox_sphinx_log_trampoline(void *user_data, err_lvl_t level, const char *fmt, ...) {
    char message[1280]; /* err_msg formats into 1024 bytes, then adds a prefix */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    ((voicebox_sphinx_log_fn)user_data)((int)level, message);
}

/* Routes all of sphinxbase's logging (process-wide) to `fn`; nothing goes to stderr any more. */
static inline void voicebox_sphinx_set_log(voicebox_sphinx_log_fn fn) {
    err_set_logfp(NULL); /* also silences cmd_ln's dump of every option */
    err_set_callback(voicebox_sphinx_log_trampoline, (void *)fn);
}

#include <sys/syscall.h>
#include <unistd.h>

// memfd_create(2) is declared only under _GNU_SOURCE: the one call the keyphrase file needs, spelled out.
static inline int voicebox_memfd_create(const char *name) {
    return (int)syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */);
}
