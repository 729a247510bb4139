"""The producer's side of certificates: writer, streaming, chunk files, fast accelerator (checker: exactmem.kernel)."""
