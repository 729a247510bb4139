"""exactmem: exact-arithmetic proof checker for Transformer memorization constructions.

Data flows one way: dataset → construction → model → exact forward pass → certificate →
independent checker → verdict/report. See ``docs/index.md``; the library surface below is
documented in ``docs/library.md`` and taught in ``docs/tutorials/``.

Library surface (imported lazily, so ``import exactmem`` stays fast)::

    import exactmem as em
    data = em.sequences(N=5, n=4, d=3, C=3)        # or em.make_data(...), em.importer.dataset(...)
    net = em.kajitsuka.next_token(data)            # Kajitsuka & Sato Thm B.1 (also .seq2seq, .hardmax)
    em.run(net, data)                              # exact outputs
    em.trace(net, data.sequences[0])               # every activation and attention weight, exactly
    print(em.inspect(net))                         # layers, stages, parameters, bits
    em.certify(net)                                # the independent checker's verdict
    em.export.save(net, "net.npz", dtype="float32")    # weights rounded to a float dtype, rounding reported
    em.verify("model.onnx", inputs, labels, out="certs")  # which examples a trained network memorizes
    em.memorized_bits("model.onnx", inputs, labels)  # how many bits it memorized, certified
    em.sweep_bits("model.onnx", inputs, labels, bits=[4, 8, 16])  # bits per weight to keep them all

Constructions: ``em.kajitsuka``, ``em.vardi``, ``em.mahdavi``, ``em.dana``; lower bounds:
``em.bounds``; weights and data in and out: ``em.export``, ``em.importer``.
"""

import importlib

from .version import __version__

# name → (module, attribute or None for the module itself)
_LAZY = {
    "kajitsuka": ("exactmem.api.kajitsuka", None),
    "vardi": ("exactmem.api.vardi", None),
    "mahdavi": ("exactmem.api.mahdavi", None),
    "dana": ("exactmem.api.dana", None),
    "bounds": ("exactmem.bounds", None),
    "export": ("exactmem.export", None),
    "importer": ("exactmem.export.importer", None),
    "api": ("exactmem.api", None),
    "Memorizer": ("exactmem.api", "Memorizer"),
    "Claim": ("exactmem.api", "Claim"),
    "sequences": ("exactmem.api", "sequences"),
    "make_data": ("exactmem.api", "make_data"),
    "check_data": ("exactmem.api", "check_data"),
    "dataset": ("exactmem.api", "dataset"),
    "run": ("exactmem.api", "run"),
    "trace": ("exactmem.api", "trace"),
    "certify": ("exactmem.api", "certify"),
    "inspect": ("exactmem.inspector.text", "inspect"),
    "measure": ("exactmem.model.measure", "measure"),
    "verify": ("exactmem.verify", "verify"),
    "sweep_bits": ("exactmem.verify.bits_report", "sweep_bits"),
    "memorized_bits": ("exactmem.verify.run", "memorized_bits"),
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    try:
        mod, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'exactmem' has no attribute {name!r}") from None
    m = importlib.import_module(mod)
    value = m if attr is None else getattr(m, attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
