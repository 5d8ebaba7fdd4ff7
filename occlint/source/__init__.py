"""The CUDA source model: kernels, shared memory, launch sites and attribute calls, found with
tree-sitter queries. `parse` never raises; unknown values are None, never guesses."""

from occlint.source.build import parse
from occlint.source.resolve import find_kernel
from occlint.source.specialize import Specialized, launch_template_args, specialize

__all__ = ["Specialized", "find_kernel", "launch_template_args", "parse", "specialize"]
