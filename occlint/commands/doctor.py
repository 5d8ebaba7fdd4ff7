"""`occlint doctor` (not implemented yet)."""

from occlint.errors import OcclintError


def add_arguments(parser):
    pass


def run(args):
    raise OcclintError("`occlint doctor` is not implemented yet")
