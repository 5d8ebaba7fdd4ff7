"""The one exception type that ends a command with exit 2 and a one-line message."""


class OcclintError(Exception):
    """A usage, configuration or tool error: printed as `occlint: error: <message>`, exit 2."""
