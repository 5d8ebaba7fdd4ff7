"""`occlint lock` (not implemented yet)."""

from occlint.errors import OcclintError


def add_arguments(parser):
    pass


def run(args):
    raise OcclintError("`occlint lock` is not implemented yet")
