"""ptrport: checks that device addresses stored in tensors stay intact on every backend.

Data flow: :mod:`~ptrport.check.strategies` draw addresses and batches; a
:mod:`subject <ptrport.check.subjects>` creates a :mod:`pointer table <ptrport.check.tables>`,
stages the batch, transfers it and executes it with an :mod:`engine <ptrport.check.engines>`
on a :mod:`backend <ptrport.device.backends>`; :mod:`~ptrport.check.verify` checks the result;
the :mod:`run <ptrport.run.session>` records it and writes a
:mod:`platform report <ptrport.report.platform_report>`.

The layers are the folders, importing downwards only: :mod:`~ptrport.plugin`,
:mod:`~ptrport.cli` and :mod:`~ptrport.scenarios` on top, then :mod:`~ptrport.run`, then
:mod:`~ptrport.check`, then :mod:`~ptrport.device`, :mod:`~ptrport.report` and
:mod:`~ptrport.lint` side by side, then the shared leaves here (errors, addresses, named,
dtype_names). ``lint-imports`` checks it (``[tool.importlinter]`` in pyproject.toml). This
module imports nothing: the plugin's entry point loads it in every pytest run.
"""

__version__ = "0.1.0"
