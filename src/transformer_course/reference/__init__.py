"""Reference building blocks that later notebooks use in place of earlier exercises.

A notebook never needs a learner's answer from an earlier notebook. Attention, layer norm, the feed-forward
network and the encoder and decoder layers compute with PyTorch's own modules, so they reveal little; the encoder
and decoder stacks and the full Transformer (notebooks 06 and 07) do show their structure.

Each block lives in the module of the notebook that teaches it, ``nbNN_<assignment>`` (``nb06_transformer_block``
holds LayerNorm, FeedForward, EncoderLayer and Encoder); ``pytorch_layers`` is support code of no notebook. A
student release for assignment NN holds only the modules of notebooks before NN (autograder/release.py), so a
block arrives once the notebook that teaches it is due. This package re-exports the names of the modules present:
``from transformer_course.reference import attention`` works wherever notebook 02's module is released.
"""

import importlib
import pkgutil


def _export_modules_present() -> list[str]:
    """Import every module of this package that is present and make its public names the package's own."""
    exported = []
    for found in sorted(pkgutil.iter_modules(__path__), key=lambda found: found.name):
        module = importlib.import_module(f"{__name__}.{found.name}")
        globals().update({name: getattr(module, name) for name in module.__all__})
        exported += module.__all__
    return exported


__all__ = _export_modules_present()
