"""`occlint server` (not implemented yet)."""

from occlint.errors import OcclintError


def add_arguments(parser):
    pass


def run(args):
    raise OcclintError("`occlint server` is not implemented yet")
