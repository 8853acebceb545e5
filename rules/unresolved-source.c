/* unresolved-source: reported by the Python front end through the engine; listed for docs. */
#include "rules/rules.h"

const struct kl_rule kl_rule_unresolved_source = {
    .id = "unresolved-source",
    .default_severity = KL_SEV_NOTE,
    .implemented = true,
    .summary = "An embedded kernel whose MSL source kernlint cannot read statically",
    .what = "Reports an MLX `mx.fast.metal_kernel` / `mx.fast.MetalKernel` or PyTorch "
            "`torch.mps.compile_shader` call whose source (or MLX `header=`) is not a string "
            "kernlint can recover without running the program: it follows string literals "
            "(escapes and raw strings included), module and function constants, implicit and `+` "
            "concatenation, f-strings (their fields put in when known), `.format()`, `%` and "
            "`.replace()`, `textwrap.dedent`, the file's own helpers called with known values, "
            "and a string or a list of lines grown statement by statement (`src += ...`, "
            "`lines.append(...)`, then `\"\\n\".join(lines)`), also in loops over known values "
            "(`range(4)`, a tuple written out), which it unrolls. A "
            "source built otherwise is reported here, at the source argument, and that kernel "
            "is not checked; the note names the form and the line where the text is built: a "
            "function parameter no call binds, text read from a file, a list or string built by "
            "a loop over values only the run knows, a comprehension, a text grown under a "
            "condition, a loop variable, the result of "
            "calling a function of another module. The kernel is named as "
            "written (an f-string name with its fields). Its calls' threadgroup sizes and "
            "bfloat arguments are still checked.",
    .why = "A kernel kernlint cannot read is a kernel it cannot check: this note says so rather "
           "than staying silent, so a clean report is not mistaken for a checked kernel.",
    .example = "import mlx.core as mx\n"
               "\n"
               "def make(op):\n"
               "    src = f\"uint i = thread_position_in_grid.x; out[i] = {op}(inp[i]);\"\n"
               "    return mx.fast.metal_kernel(name=\"k\", input_names=[\"inp\"],\n"
               "                                output_names=[\"out\"], source=src)",
    .instead = "import mlx.core as mx\n"
               "\n"
               "# One literal source per kernel: each is read and checked.\n"
               "EXP = mx.fast.metal_kernel(\n"
               "    name=\"k_exp\", input_names=[\"inp\"], output_names=[\"out\"],\n"
               "    source=\"uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]);\")\n"
               "LOG = mx.fast.metal_kernel(\n"
               "    name=\"k_log\", input_names=[\"inp\"], output_names=[\"out\"],\n"
               "    source=\"uint i = thread_position_in_grid.x; out[i] = metal::log(inp[i]);\")",
    .check = NULL,
};
