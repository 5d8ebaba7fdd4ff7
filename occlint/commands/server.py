"""`occlint server`: the language server on stdio (see occlint.lsp)."""


def add_arguments(parser):
    parser.add_argument("--stdio", action="store_true",
                        help="talk LSP over stdin/stdout (the default and only transport)")


def run(args):
    from occlint.lsp import serve

    serve()
    return 0
