"""Context assembly: the boot sequence on a token budget, the budget calculator, the flush."""

from typing import TYPE_CHECKING

from memdir.lazy import lazy_exports

if TYPE_CHECKING:
    from memdir.context.assemble import PROFILES, Block, Context, LayerReport, LeftOut, assemble
    from memdir.context.flush import FLUSH_THRESHOLD, FlushSession, should_memory_flush
    from memdir.context.tokens import ByteCounter, TokenCounter, TokenizerFileCounter

# imported on first use: PROFILES is a name, assembling is a feature
__getattr__, __dir__ = lazy_exports(
    globals(),
    {
        "Block": "memdir.context.assemble",
        "ByteCounter": "memdir.context.tokens",
        "Context": "memdir.context.assemble",
        "FLUSH_THRESHOLD": "memdir.context.flush",
        "FlushSession": "memdir.context.flush",
        "LayerReport": "memdir.context.assemble",
        "LeftOut": "memdir.context.assemble",
        "PROFILES": "memdir.context.assemble",
        "TokenCounter": "memdir.context.tokens",
        "TokenizerFileCounter": "memdir.context.tokens",
        "assemble": "memdir.context.assemble",
        "should_memory_flush": "memdir.context.flush",
    },
)

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
