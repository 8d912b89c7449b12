"""Builds a tiny, untrained BERT cross-encoder in a folder: no download, about a second.

A `BertForSequenceClassification` with one label (a relevance score per pair), saved with the word-piece
tokenizer of `tests.rag.tiny_bert`, is what sentence-transformers' `CrossEncoder` loads from a folder.
"""

from __future__ import annotations

from pathlib import Path

from tests.rag.tiny_bert import tiny_tokenizer, vocabulary


def build_tiny_cross_encoder(folder: Path, *, seed: int = 0) -> Path:
    """Write the model to `folder / "tiny-cross-encoder"` and return that folder."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    vocab = vocabulary()
    tokenizer = tiny_tokenizer(folder / "tokenizer")

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=128,
        initializer_range=0.5,  # wider than the default 0.02, so the untrained scores spread out
    )
    config.num_labels = 1  # one relevance score per (query, passage) pair
    target = folder / "tiny-cross-encoder"
    BertForSequenceClassification(config).save_pretrained(str(target))
    tokenizer.save_pretrained(str(target))
    return target
