"""The CUDA source model: kernels, shared memory, launch sites and attribute calls, found with
tree-sitter queries. Unknown values are None, never guesses.

    parse(text, path="<input>", view=None) -> SourceFile   never raises; bytes decoded as UTF-8;
                                                       view: the unit's -D/-U/-I (preproc.View)
    for_arch(sf, arch) -> SourceFile                   the device pass for one arch
    specialize(sf, kernel, values) -> Specialized      template parameters bound (ints; a str
                                                       binds a type parameter: "float")
    launch_template_args(launch) -> tuple              a launch's arguments for `specialize`

Modules: text (decoding, positions), grammar (language, queries), context (one parsed file,
scopes, locals), preproc (conditionals per pass), consteval (constant evaluation), kernels,
shared, indices (thread-derived subscripts), launches, macros (launches in macro bodies), values
(few-valued expressions), specialization (specialize), build (parse). Which kernel a launch or
attribute call names is occlint.link's question.
"""

__all__ = ["Specialized", "for_arch", "launch_template_args", "parse", "specialize"]
# A name here must not be a submodule's: importing `occlint.source.X` sets the package's X to
# the module, and then `from occlint.source import X` never reaches __getattr__.
_HOME = {"for_arch": "build", "parse": "build", "Specialized": "specialization",
         "launch_template_args": "specialization", "specialize": "specialization"}


def __getattr__(name: str):
    """Load the parser on first use (PEP 562): `occlint.source.text` alone, as build files and
    a warm run from the findings cache need, does not import tree-sitter and the queries."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value
