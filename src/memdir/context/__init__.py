"""Context assembly: the boot sequence on a token budget, the budget calculator, the flush."""

from memdir.context.assemble import PROFILES, Block, Context, LayerReport, LeftOut, assemble
from memdir.context.flush import FLUSH_THRESHOLD, FlushSession, should_memory_flush
from memdir.context.tokens import ByteCounter, TokenCounter, TokenizerFileCounter

__all__ = [
    "FLUSH_THRESHOLD",
    "PROFILES",
    "Block",
    "ByteCounter",
    "Context",
    "FlushSession",
    "LayerReport",
    "LeftOut",
    "TokenCounter",
    "TokenizerFileCounter",
    "assemble",
    "should_memory_flush",
]
