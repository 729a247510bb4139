"""``exactmem verify``: certify, example by example, what a trained network memorizes.

ONNX files (or ``torch.nn.Module``\\ s, exported in-process) are lowered to the graph of
``docs/verify-format.md`` (`.onnx_import`, one function per ONNX operator in `.ops`),
evaluated in ball arithmetic (`.evaluate`, untrusted) and written as a certificate the
kernel re-derives (`.certificate`). User guide: ``docs/verify.md``.

``exactmem.verify`` is both this package and the function [`verify`][exactmem.verify.verify]: the module itself is
callable, so ``em.verify(model, inputs, labels)`` works whichever of the two ``em.verify`` is.
"""

import sys
import types


def verify(model, inputs=None, labels=None, **kwargs):
    """See `exactmem.verify.run.verify`."""
    from .run import verify as _verify

    return _verify(model, inputs, labels, **kwargs)


class _CallableModule(types.ModuleType):
    def __call__(self, model, inputs=None, labels=None, **kwargs):
        return verify(model, inputs, labels, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["verify"]
