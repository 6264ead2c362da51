/* Why scripts/sanitizers/lsan.supp suppresses libsphinxbase: its JSGF parser (sphinxbase 0.8, Debian 12)
 * leaks on some syntax errors, in its bison parser, which we cannot free from outside. N calls:
 *   clang -fsanitize=address -g scripts/sanitizers/jsgf-leak-repro.c $(pkg-config --cflags --libs sphinxbase) -o /tmp/jsgf-leak
 *   ASAN_OPTIONS=detect_leaks=1 /tmp/jsgf-leak '#JSGF V1.0; grammar g; public <a> = (go | ;' 10   # 630 bytes in 50 allocations
 *   ASAN_OPTIONS=detect_leaks=1 /tmp/jsgf-leak '#JSGF V1.0; grammar g; public <a> = ;' 10        # 40 bytes in 10
 *   ASAN_OPTIONS=detect_leaks=1 /tmp/jsgf-leak '#JSGF V1.0; grammar g; public <a> = yes | no;' 10 # none (parsed and freed)
 * (clang is /opt/swift/usr/bin/clang.) */
#include <stdio.h>
#include <stdlib.h>
#include <sphinxbase/jsgf.h>
#include <sphinxbase/err.h>
int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[2]) : 1;
    err_set_logfp(NULL);
    for (int i = 0; i < n; i++) {
        jsgf_t *g = jsgf_parse_string(argv[1], NULL);
        if (g) jsgf_grammar_free(g);
    }
    return 0;
}
