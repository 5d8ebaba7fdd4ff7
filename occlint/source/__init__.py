"""The CUDA source model: kernels, shared memory, launch sites and attribute calls, found with
tree-sitter queries. Unknown values are None, never guesses.

    parse(text, path="<input>") -> SourceFile        never raises; bytes are decoded as UTF-8
    specialize(sf, kernel, values) -> Specialized      template parameters bound (ints; a str
                                                       binds a type parameter: "float")
    launch_template_args(launch) -> tuple              a launch's arguments for `specialize`
    find_kernel(sf_or_kernels, launch_or_name)         the kernel a callee names, or None

Modules: text (decoding, positions), grammar (language, queries), context (one parsed file,
scopes, locals), consteval (constant evaluation), kernels, shared, indices (thread-derived
subscripts), launches, macros (launches in macro bodies), specialize, resolve, build (parse).
"""

from occlint.source.build import parse
from occlint.source.resolve import find_kernel
from occlint.source.specialize import Specialized, launch_template_args, specialize

__all__ = ["Specialized", "find_kernel", "launch_template_args", "parse", "specialize"]
