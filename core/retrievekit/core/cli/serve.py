"""``retrievekit serve``: llama.cpp's OpenAI-compatible server over a GGUF, on 127.0.0.1, in the foreground.

Examples:
    $ retrievekit serve --port 8080 --parallel 2   # then --llm openai:smollm2@http://127.0.0.1:8080/v1
    $ retrievekit serve --gguf qwen1.5b --port 8081   # a model from the registry, by name
    $ retrievekit serve --parallel 4 --cache-ram 1024   # llama.cpp's prompt cache held to 1 GiB of memory
"""

from __future__ import annotations

import argparse

__all__ = ["HELP", "add_arguments", "run"]

HELP = "serve a GGUF (default: SmolLM2) with llama.cpp's OpenAI-compatible server on 127.0.0.1"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``retrievekit serve``.

    Examples:
        >>> p = argparse.ArgumentParser(); add_arguments(p)
        >>> p.parse_args(["--port", "9000"]).parallel
        2
        >>> p.parse_args(["--cache-ram", "1024"]).cache_ram
        1024
    """
    p.add_argument(
        "--gguf", default=None, help="GGUF file or a model name (smollm2, qwen0.5b, qwen1.5b; default: smollm2)"
    )
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--parallel", type=int, default=2, help="slots (requests computed together)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads (1 on a 2-core machine)")
    p.add_argument("--ctx-per-slot", type=int, default=4096, help="context tokens per slot")
    p.add_argument("--embedding", action="store_true", help="serve /v1/embeddings (mean pooling), not completions")
    p.add_argument(
        "--cache-ram",
        type=int,
        default=None,
        metavar="MIB",
        help="most memory llama.cpp's prompt cache may hold, in MiB (default: llama.cpp's 8192; 0: off; -1: no limit)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM / SIGINT (:func:`~retrievekit.core.llm.llamacpp_server.serve`); returns the exit code.

    Examples:
        >>> run(argparse.Namespace(gguf=None, port=8080, parallel=2, threads=1, ctx_per_slot=4096))  # doctest: +SKIP
    """
    from retrievekit.core.llm.llamacpp_server import serve

    return serve(
        args.gguf,
        port=args.port,
        parallel=args.parallel,
        threads=args.threads,
        ctx_per_slot=args.ctx_per_slot,
        embedding=getattr(args, "embedding", False),
        cache_ram_mib=getattr(args, "cache_ram", None),
    )
