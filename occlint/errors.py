"""The one exception type that ends a command with exit 2 and a one-line message."""


class OcclintError(Exception):
    """A usage, configuration or tool error: printed as `occlint: error: <message>`, exit 2."""


def described(exc: BaseException, limit: int = 200) -> str:
    """`Type: message` of an unexpected exception for one error line: the message's first line,
    cut at `limit` characters (a KeyError of a syntax tree node printed the whole branch)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    more = len(first) > limit or first != text
    return f"{type(exc).__name__}: {first[:limit]}{' ...' if more else ''}"
