/* The hidden `kernlint --dump-ir FILE...`: the IR of every kernel of each file, as the engine
 * parses it (preprocessing, dialect, Python embeds), printed by kl_ir_print. */
#ifndef KL_IR_DUMP_H
#define KL_IR_DUMP_H

#include <stdio.h>

/* Print the IR of the kernels of paths[0, n) to out; returns the exit status (0; 2 when a file
 * cannot be read or parsed, after the others are printed). */
int kl_ir_dump_main(int n, char **paths, FILE *out);

#endif
