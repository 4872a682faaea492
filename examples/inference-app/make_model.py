"""Build a sequence-classification model offline: real architecture, random weights, real tokenizer files.

Tests and the benchmark cannot download weights, so they build one here. The architecture is DistilBERT
(what the classic ``distilbert-base-uncased-finetuned-sst-2-english`` sentiment model uses); the tokenizer is a
WordPiece vocabulary written by this script (special tokens, single characters with their ``##`` forms, and
common English words), so any lower-case ASCII text tokenizes without ``[UNK]`` floods.

    python make_model.py OUT_DIR [--size tiny|mini|small|base|large]

The labels are ``NEGATIVE``/``POSITIVE``; with random weights the scores are meaningless but deterministic
(fixed seed), which is what the tests need.
"""

import argparse
import string
from pathlib import Path

SIZES = {
    # layers, hidden, heads, feed-forward
    "tiny": (2, 64, 2, 128),  # the tests' model: builds and loads in a blink
    "mini": (2, 128, 2, 512),  # BERT-Tiny's dimensions
    "small": (4, 256, 4, 1024),  # BERT-Mini's dimensions
    "base": (6, 768, 12, 3072),  # DistilBERT-base: the classic SST-2 sentiment model's architecture
    "large": (24, 1024, 16, 4096),  # BERT-large's dimensions
}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "i", "love", "using", "this", "product", "it", "is", "great", "good", "bad", "terrible", "awful", "amazing",
    "the", "a", "an", "and", "or", "but", "not", "very", "really", "so", "too", "was", "are", "be", "been",
    "service", "quality", "price", "delivery", "support", "team", "app", "works", "broke", "broken", "fast", "slow",
    "happy", "sad", "angry", "recommend", "never", "again", "would", "buy", "return", "refund", "excellent", "poor",
    "worst", "best", "ever", "experience", "customer", "order", "arrived", "late", "early", "on", "time", "with",
    "without", "my", "our", "your", "they", "we", "you", "he", "she", "me", "us", "them", "of", "to", "in", "for",
    "from", "at", "by", "about", "after", "before", "day", "week", "month", "year", "hate", "like", "dislike",
    "okay", "fine", "nice", "awesome", "disappointed", "satisfied", "pleased",
]
MAX_POSITIONS = 512


def vocabulary() -> list[str]:
    """Specials, then words, then every printable character alone and as a ``##`` continuation."""
    chars = [c for c in string.ascii_lowercase + string.digits + string.punctuation]
    seen: dict[str, None] = dict.fromkeys([*SPECIALS, *WORDS, *chars, *(f"##{c}" for c in chars)])
    return list(seen)


def build(out_dir: str | Path, size: str = "tiny", seed: int = 0) -> Path:
    """Write ``config.json``, ``model.safetensors`` and the tokenizer files into ``out_dir``."""
    import torch
    from transformers import BertTokenizer, DistilBertConfig, DistilBertForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    layers, hidden, heads, ffn = SIZES[size]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vocab = {token: i for i, token in enumerate(vocabulary())}
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=True, model_max_length=MAX_POSITIONS)
    tokenizer.save_pretrained(out)
    torch.manual_seed(seed)
    config = DistilBertConfig(
        vocab_size=len(vocab), n_layers=layers, dim=hidden, n_heads=heads, hidden_dim=ffn,
        max_position_embeddings=MAX_POSITIONS, num_labels=2,
        id2label={0: "NEGATIVE", 1: "POSITIVE"}, label2id={"NEGATIVE": 0, "POSITIVE": 1},
    )
    DistilBertForSequenceClassification(config).eval().save_pretrained(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    args = parser.parse_args()
    print(build(args.out_dir, args.size))


if __name__ == "__main__":
    main()
