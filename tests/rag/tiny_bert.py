"""Builds a tiny, untrained BERT sentence-transformers model in a folder: no download, about a second.

The vocabulary is written here: special tokens, some English words, and single letters as word starts and
continuation pieces, so every lowercase ASCII word tokenizes without `[UNK]`.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = str.split(
    """
the a an and or of to in on for with from by at as is are was were be been it this that these those
cat cats dog dogs sat mat bird fish tree house car road city river mountain sun moon star sky rain
vector vectors store stores search query document documents embedding embeddings model models
chroma numpy python data text token tokens word words sentence sentences chunk chunks index
database file files folder disk memory fast slow small large big new old good bad first last
keep keeps kept find finds found read write run runs running ran make makes made use used
cell protein gene disease patient study result effect blood brain heart
"""
)
SUFFIXES = ["##s", "##es", "##ed", "##ing", "##er", "##ly", "##ion", "##al"]
LETTERS = list(string.ascii_lowercase)
PIECES = [f"##{c}" for c in string.ascii_lowercase + string.digits]
PUNCTUATION = list(".,;:!?'\"()-[]{}/")


def vocabulary() -> list[str]:
    """The word-piece vocabulary, in id order, without duplicates."""
    seen: dict[str, None] = {}
    for token in SPECIAL + WORDS + SUFFIXES + LETTERS + list(string.digits) + PIECES + PUNCTUATION:
        seen.setdefault(token, None)
    return list(seen)


def tiny_tokenizer(folder: Path) -> Any:
    """The word-piece tokenizer of `vocabulary()`, written to `folder` and loaded back, checked to know its
    words (in transformers 5 `BertTokenizer` is the fast one, and `vocab_file=` alone would be ignored)."""
    from transformers import BertTokenizer

    vocab = vocabulary()
    folder.mkdir(parents=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer.from_pretrained(str(folder))
    if len(tokenizer) != len(vocab) or tokenizer.unk_token_id in tokenizer("the cat")["input_ids"]:
        raise RuntimeError(f"the tiny tokenizer lost its vocabulary: {len(tokenizer)} tokens")
    return tokenizer


def build_tiny_bert(folder: Path, *, seed: int = 0) -> Path:
    """Write a sentence-transformers model (BERT + mean pooling) to `folder / "tiny-bert"` and return it.

    The tokenizer is saved and reloaded with `from_pretrained`: with transformers 5,
    `BertTokenizerFast(vocab_file=...)` silently ignores the vocabulary and maps every word to `[UNK]`.
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel

    vocab = vocabulary()
    tokenizer = tiny_tokenizer(folder / "tokenizer")

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    bert_dir = folder / "bert"
    BertModel(config).save_pretrained(str(bert_dir))
    tokenizer.save_pretrained(str(bert_dir))

    transformer = Transformer(str(bert_dir), max_seq_length=64)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    target = folder / "tiny-bert"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(target))
    return target
