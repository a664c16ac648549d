"""ptrport: checks that device addresses stored in tensors stay intact on every backend.

Data flow: :mod:`~ptrport.check.strategies` draw addresses and batches; a
:mod:`subject <ptrport.check.subjects>` creates a :mod:`pointer table <ptrport.check.tables>`,
stages the batch, transfers it and executes it with an :mod:`engine <ptrport.check.engines>`;
:mod:`~ptrport.check.verify` checks the result; the :mod:`plugin <ptrport.plugin>` records it and
writes a :mod:`platform report <ptrport.report.platform_report>`.
"""

__version__ = "0.1.0"
