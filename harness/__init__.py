"""ptrport: checks that device addresses stored in tensors stay intact on every backend.

Data flow: :mod:`~harness.strategies` draw addresses and batches; a
:mod:`subject <harness.subjects>` creates a :mod:`pointer table <harness.tables>`, stages the
batch, transfers it and executes it with an :mod:`engine <harness.engines>`;
:mod:`~harness.verify` checks the result; the :mod:`plugin <harness.plugin>` records it and
writes a :mod:`platform report <harness.report>`.
"""

__version__ = "0.1.0"
