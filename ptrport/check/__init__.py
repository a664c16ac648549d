"""The check layer: what is checked and how. Pointer tables, batches, engines, subjects and
their contracts, the controls catalogue, the strategies, the checks' bodies and their
verification, replay of a recorded example, the uint64 probe and the benchmarks.

It imports the device layer, the report layer's records (a check's result is one) and the
shared leaves; never :mod:`ptrport.run`, pytest's side of a run.
"""
