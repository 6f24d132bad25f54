"""`finq train router`: the router's intent classifier trained and written out. `finq train
vectors`: the vectors finq ships for its own texts (shared/stored_vectors.py) written anew."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.control.commands import Subparsers
from services.control.settings import ControlSettings


def register(subparsers: Subparsers) -> None:
    train = subparsers.add_parser("train", help="train finq's models")
    train_kinds = train.add_subparsers(dest="model", required=True)
    router = train_kinds.add_parser("router", help="the router's intent classifier")
    # Defaults live with the training code, which is only imported when training runs.
    router.add_argument("--seed", type=int, help="default: the seed the shipped model used")
    router.add_argument("--size", type=int, help="examples per template (default 30)")
    router.add_argument("--out", help="artifacts folder (default: the shipped one)")
    router.set_defaults(handler=command_train_router)
    vectors = train_kinds.add_parser(
        "vectors", help="MiniLM's vectors of the catalog's names and the glossary's passages"
    )
    vectors.add_argument("--out", help="folder to write to (default: the shipped one)")
    vectors.set_defaults(handler=command_train_vectors)


def command_train_router(args: argparse.Namespace, _: ControlSettings) -> int:
    from services.router.intent_classifier import ARTIFACTS_DIR
    from services.router.intent_training import DEFAULT_PER_TEMPLATE, DEFAULT_SEED, train
    from shared.embeddings import MiniLMEmbedder

    out = Path(args.out) if args.out else ARTIFACTS_DIR
    print("loading MiniLM…", flush=True)
    embedder = MiniLMEmbedder.load()
    _, report = train(
        embedder,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        per_template=args.size or DEFAULT_PER_TEMPLATE,
        out=out,
    )
    print(f"seed {report.seed}; examples " + ", ".join(f"{k} {v}" for k, v in report.sizes.items()))
    print("accuracy " + ", ".join(f"{k} {v:.1%}" for k, v in report.accuracy.items()))
    print("test accuracy per intent (templates never seen in training):")
    for intent, accuracy in report.per_intent_test.items():
        print(f"  {intent:20} {accuracy:.1%}")
    print(f"wrote {out} in {report.seconds:.1f} s")
    return 0


def shipped_texts() -> list[str]:
    """The texts finq ships vectors for, as they are embedded: the metric resolver's index
    (every catalog name and description) and the bundled glossary's passages."""
    from services.ingest.documents import glossary_passages
    from shared.metric_resolver import MetricResolver

    return [*MetricResolver.from_catalog().embedding_texts, *glossary_passages()]


def command_train_vectors(args: argparse.Namespace, _: ControlSettings) -> int:
    from shared.embeddings import MiniLMEmbedder
    from shared.stored_vectors import VECTORS_DIR, embed_to_store, vectors_path

    texts = shipped_texts()
    print(f"loading MiniLM to embed {len(texts)} texts…", flush=True)
    embedder = MiniLMEmbedder.load()
    store = embed_to_store(embedder, texts)
    path = vectors_path(embedder.name, Path(args.out) if args.out else VECTORS_DIR)
    store.write(path)
    print(f"wrote {len(store)} vectors to {path}")
    return 0
